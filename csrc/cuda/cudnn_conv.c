/* cudnn_conv.c: 2-d convolution on CUDA through cuDNN (the backend table's conv2d_* entries).
 *
 * Algorithms. The first time a key is seen (direction, shapes, layout, paddings, strides,
 * dilations, groups, dtype, and the settings of settings.c: TF32, search mode, workspace limit)
 * an algorithm is chosen and cached per device handle. In the heuristic mode (the default) it is
 * the best of cuDNN's ranking (cudnnGet*Algorithm_v7: no trial runs, so no allocations or kernel
 * launches while choosing); in the search mode every candidate is timed once on the call's own
 * tensors (cudnnFind*AlgorithmEx, with a workspace from the caching allocator) and the fastest
 * is kept. Both skip algorithms whose workspace exceeds the limit.
 *
 * Math. float64 and float32 run FMA-only (no TF32), so results stay within float rounding of
 * the CPU, unless TF32 is allowed (mt_cuda_set_allow_tf32), when float32 may use TF32 tensor
 * ops (CUDNN_TENSOR_OP_MATH; not ..._ALLOW_CONVERSION, which would also let cuDNN convert
 * float32 to float16, with its narrower exponent range). float16/bfloat16 run on tensor ops and
 * accumulate in float32 (the convolution's compute type is CUDNN_DATA_FLOAT).
 *
 * Layouts. Every operand may be NCHW-contiguous or channels-last (NHWC: a 4-d N x C x H x W
 * tensor with strides H*W*C, 1, W*C, C). The activation's layout (x for the forward pass and
 * the weight gradient, dx for the input gradient) is the convolution's layout: operands in the
 * other layout are converted into temporaries first (and results converted back), so cuDNN
 * always sees one layout, CUDNN_TENSOR_NCHW or CUDNN_TENSOR_NHWC. A channels-last model thus
 * runs on cuDNN's NHWC kernels without a copy. Where cuDNN has no NHWC algorithm for a
 * configuration (remembered in the cache), the pass runs in NCHW through temporaries instead.
 * Workspaces and temporaries come from the caching allocator. */
#include <limits.h>
#include <string.h>
#include "cudnn_common.h"

#define OP "nn.SpatialConvolution"

typedef struct conv_desc {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnDataType_t dt;
  int dtype, device;
  size_t ws_limit; /* bytes */
  int no_algo;     /* set when cuDNN offered no usable algorithm (the caller may try NCHW) */
  mt__cudnn_conv_key key;
} conv_desc;

static void desc_free(conv_desc *d) {
  if (d->x) cudnnDestroyTensorDescriptor(d->x);
  if (d->y) cudnnDestroyTensorDescriptor(d->y);
  if (d->w) cudnnDestroyFilterDescriptor(d->w);
  if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
}

/* the legacy descriptors take int sizes and at most INT_MAX elements per tensor */
static mt_status fits_int(const mt_tensor *t, const char *what) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->sizes[i] > INT_MAX) n = (int64_t)INT_MAX + 1;
    else n *= t->sizes[i];
    if (n > INT_MAX) return mt__error(MT_ERR_SHAPE, OP ": %s has more elements than cuDNN accepts (2^31 - 1)", what);
  }
  return MT_OK;
}

/* ---- layouts ---- */

/* MT_CUDNN_NCHW (contiguous), MT_CUDNN_NHWC (channels-last) or -1 (neither) of a 4-d tensor.
 * Strides of size-1 dimensions do not matter; a tensor that is both counts as NCHW. */
static int layout_of(const mt_tensor *t) {
  if (t->ndim != 4) return -1;
  if (mt__is_contiguous(t)) return MT_CUDNN_NCHW;
  return mt__is_channels_last(t) ? MT_CUDNN_NHWC : -1;
}

/* An uninitialised 4-d tensor of t's sizes, dtype and device in `layout` */
static mt_status empty_in_layout(mt_tensor **out, const mt_tensor *t, int layout) {
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, 4, t->sizes));
  if (layout == MT_CUDNN_NHWC) mt__channels_last_strides(t->sizes, (*out)->strides);
  return MT_OK;
}

/* *use = t when it is in `layout`, else a temporary in `layout` (*tmp, holding t's values when
 * `values` is set); *tmp is NULL when t is used as is */
static mt_status in_layout(const mt_tensor *t, int layout, int values, mt_tensor **tmp, const mt_tensor **use) {
  *tmp = NULL;
  *use = t;
  if (layout_of(t) == layout) return MT_OK;
  MT_TRY(empty_in_layout(tmp, t, layout));
  mt_status st = values ? mt__cuda_convert(*tmp, t) : MT_OK;
  if (st != MT_OK) {
    mt_tensor_release(*tmp);
    *tmp = NULL;
    return st;
  }
  *use = *tmp;
  return MT_OK;
}

/* ---- descriptors ---- */

static int half_type(const conv_desc *d) { return d->dt == CUDNN_DATA_HALF || d->dt == CUDNN_DATA_BFLOAT16; }

/* descriptors for x (N C H W), w (O C/g kH kW) and y (N O oH oW), all in `layout` */
static mt_status desc_make(conv_desc *d, const mt_tensor *x, const mt_tensor *w, const mt_tensor *y, int layout,
                           const mt_conv_geom *g) {
  memset(d, 0, sizeof *d);
  d->dtype = x->dtype;
  d->device = x->device;
  if (mt__cudnn_dtype(x->dtype, &d->dt))
    return mt__error(MT_ERR_DTYPE, OP ": dtype %s is not supported on CUDA", mt_dtype_name(x->dtype));
  MT_TRY(fits_int(x, "the input"));
  MT_TRY(fits_int(w, "the weight"));
  MT_TRY(fits_int(y, "the output"));
  mt__cudnn_conv_key *k = &d->key;
  k->dtype = x->dtype, k->groups = (int)g->groups;
  k->N = (int)x->sizes[0], k->C = (int)x->sizes[1], k->H = (int)x->sizes[2], k->W = (int)x->sizes[3];
  k->O = (int)w->sizes[0], k->kH = (int)w->sizes[2], k->kW = (int)w->sizes[3];
  k->sH = (int)g->sH, k->sW = (int)g->sW, k->pH = (int)g->pH, k->pW = (int)g->pW, k->dH = (int)g->dH,
  k->dW = (int)g->dW;
  k->layout = layout;
  /* the settings this call runs under; the key makes choices per setting */
  k->tf32 = d->dt == CUDNN_DATA_FLOAT && mt__cuda_tf32();
  k->search = mt__cuda_conv_mode() == MT_CONV_ALGO_SEARCH;
  d->ws_limit = mt__cuda_conv_ws_limit();
  k->ws_kib = (int)(d->ws_limit >> 10);
  /* float16/bfloat16 accumulate in float (cuDNN's "pseudo half" configurations) */
  cudnnDataType_t compute = d->dt == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t fmt = layout == MT_CUDNN_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  MT_CUDNN_TRY(cudnnCreateTensorDescriptor(&d->x), OP);
  MT_CUDNN_TRY(cudnnCreateTensorDescriptor(&d->y), OP);
  MT_CUDNN_TRY(cudnnCreateFilterDescriptor(&d->w), OP);
  MT_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&d->conv), OP);
  MT_CUDNN_TRY(cudnnSetTensor4dDescriptor(d->x, fmt, d->dt, k->N, k->C, k->H, k->W), OP);
  MT_CUDNN_TRY(cudnnSetTensor4dDescriptor(d->y, fmt, d->dt, (int)y->sizes[0], (int)y->sizes[1], (int)y->sizes[2],
                                          (int)y->sizes[3]),
               OP);
  MT_CUDNN_TRY(cudnnSetFilter4dDescriptor(d->w, d->dt, fmt, k->O, (int)w->sizes[1], k->kH, k->kW), OP);
  MT_CUDNN_TRY(cudnnSetConvolution2dDescriptor(d->conv, k->pH, k->pW, k->sH, k->sW, k->dH, k->dW,
                                               CUDNN_CROSS_CORRELATION, compute),
               OP);
  MT_CUDNN_TRY(cudnnSetConvolutionGroupCount(d->conv, k->groups), OP);
  return MT_OK;
}

/* The math type the candidates are asked for: tensor ops for halves and for float32 under TF32,
 * FMA only otherwise */
static cudnnMathType_t ask_math(const conv_desc *d) {
  return half_type(d) || d->key.tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

/* whether a candidate found with math type `math` may be used for this dtype and setting */
static int math_ok(const conv_desc *d, cudnnMathType_t math) {
  if (half_type(d)) return 1;
  if (d->key.tf32) return math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  return math == CUDNN_DEFAULT_MATH || math == CUDNN_FMA_MATH;
}

/* The math type an accepted candidate runs with. float32 without TF32 and float64 run FMA-only
 * even when cuDNN reports a candidate as DEFAULT_MATH, which on Ampere and later would permit
 * TF32. */
static cudnnMathType_t run_math(const conv_desc *d, cudnnMathType_t found) {
  if (half_type(d) || d->key.tf32) return found;
  return CUDNN_FMA_MATH;
}

static mt_status set_math(conv_desc *d, cudnnMathType_t math) {
  MT_CUDNN_TRY(cudnnSetConvolutionMathType(d->conv, math), OP);
  return MT_OK;
}

/* ---- choosing ---- */

/* found = 1 and *out = the first of the n results (best first) that ran, fits the workspace
 * limit and has an allowed math type; a macro because the three perf struct types only share
 * fields */
#define PICK_ALGO(perf, n, d, out, found)                                                      \
  for (int i = 0; i < (n) && !(found); i++)                                                    \
    if ((perf)[i].status == CUDNN_STATUS_SUCCESS && (perf)[i].memory <= (d)->ws_limit &&       \
        math_ok((d), (perf)[i].mathType)) {                                                    \
      (out)->algo = (int)(perf)[i].algo, (out)->math = (int)run_math((d), (perf)[i].mathType), \
      (out)->workspace = (perf)[i].memory;                                                     \
      (found) = 1;                                                                             \
    }

/* the largest workspace among the n heuristic candidates that fit the limit: what a search
 * needs so that each of them can be timed */
#define MAX_WS(perf, n, d, ws)                                                           \
  for (int i = 0; i < (n); i++)                                                          \
    if ((perf)[i].status == CUDNN_STATUS_SUCCESS && (perf)[i].memory <= (d)->ws_limit && \
        math_ok((d), (perf)[i].mathType) && (perf)[i].memory > (ws))                     \
      (ws) = (perf)[i].memory;

/* The tensors of the call, which a search runs the candidates on: a and b are read, c is
 * written (the caller's output for the forward and input-gradient passes, which are overwritten
 * anyway; a scratch buffer for the weight gradient, which accumulates). */
typedef struct conv_args {
  const void *a, *b;
  void *c;
} conv_args;

/* A scratch device buffer of nbytes (NULL with *t NULL when nbytes is 0). */
static mt_status scratch(mt_tensor **t, int device, size_t nbytes) {
  *t = NULL;
  if (nbytes == 0) return MT_OK;
  int64_t m = (int64_t)nbytes;
  return mt__tensor_empty(t, MT_U8, device, 1, &m);
}

/* Time the candidates (cudnnFind*AlgorithmEx) with a workspace of ws bytes; found = 1 and *out
 * the fastest allowed one. A search that cannot get its workspace or fails leaves found = 0 and
 * the caller keeps the heuristic choice. */
static void search(cudnnHandle_t h, conv_desc *d, int kind, const conv_args *io, size_t ws_bytes,
                   mt__cudnn_conv_algo *out, int *found) {
  mt_tensor *ws = NULL;
  if (scratch(&ws, d->device, ws_bytes) != MT_OK) return;
  void *wp = ws ? mt__data(ws) : NULL;
  int n = 0;
  cudnnStatus_t st;
  if (kind == MT_CUDNN_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    st = cudnnFindConvolutionForwardAlgorithmEx(h, d->x, io->a, d->w, io->b, d->conv, d->y, io->c,
                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, wp, ws_bytes);
    if (st == CUDNN_STATUS_SUCCESS) PICK_ALGO(perf, n, d, out, *found);
  } else if (kind == MT_CUDNN_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    st = cudnnFindConvolutionBackwardDataAlgorithmEx(h, d->w, io->a, d->y, io->b, d->conv, d->x, io->c,
                                                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, wp, ws_bytes);
    if (st == CUDNN_STATUS_SUCCESS) PICK_ALGO(perf, n, d, out, *found);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    st = cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d->x, io->a, d->y, io->b, d->conv, d->w, io->c,
                                                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, wp, ws_bytes);
    if (st == CUDNN_STATUS_SUCCESS) PICK_ALGO(perf, n, d, out, *found);
  }
  mt_tensor_release(ws); /* stream-ordered: reused only by work queued after the search */
}

static mt_status no_algorithm(conv_desc *d) {
  d->no_algo = 1;
  return mt__error(MT_ERR_CUDA,
                   OP
                   ": cuDNN has no algorithm for input %dx%dx%dx%d, weight %dx%dx%dx%d, %s, %s, within a "
                   "workspace limit of %d KiB (torch.cuda.convAlgorithm sets it)",
                   d->key.N, d->key.C, d->key.H, d->key.W, d->key.O, d->key.C / d->key.groups, d->key.kH, d->key.kW,
                   mt_dtype_name(d->dtype), d->key.layout == MT_CUDNN_NHWC ? "channels-last" : "NCHW", d->key.ws_kib);
}

/* the cached choice for d->key (kind set), or a new one from the heuristics or a search; a
 * cached algo < 0 records that there is none */
static mt_status choose(cudnnHandle_t h, conv_desc *d, int kind, const conv_args *io, mt__cudnn_conv_algo *out) {
  d->key.kind = kind;
  if (mt__cudnn_cache_get(d->device, &d->key, out)) {
    if (out->algo < 0) return no_algorithm(d);
    return set_math(d, (cudnnMathType_t)out->math);
  }
  MT_TRY(set_math(d, ask_math(d)));
  int n = 0, found = 0;
  size_t max_ws = 0;
  if (kind == MT_CUDNN_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    MT_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->w, d->conv, d->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                        &n, perf),
                 OP);
    PICK_ALGO(perf, n, d, out, found);
    MAX_WS(perf, n, d, max_ws);
  } else if (kind == MT_CUDNN_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    MT_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d->w, d->y, d->conv, d->x,
                                                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                 OP);
    PICK_ALGO(perf, n, d, out, found);
    MAX_WS(perf, n, d, max_ws);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    MT_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d->x, d->y, d->conv, d->w,
                                                               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                 OP);
    PICK_ALGO(perf, n, d, out, found);
    MAX_WS(perf, n, d, max_ws);
  }
  if (d->key.search) {
    mt__cudnn_conv_algo timed;
    int timed_found = 0;
    search(h, d, kind, io, max_ws, &timed, &timed_found);
    if (timed_found) *out = timed, found = 1;
    MT_TRY(set_math(d, ask_math(d))); /* a search may leave another math type behind */
  }
  if (!found) {
    /* remembered too, so a layout cuDNN cannot serve is not asked about on every call */
    mt__cudnn_conv_algo none = {-1, 0, 0};
    MT_TRY(mt__cudnn_cache_put(d->device, &d->key, &none));
    return no_algorithm(d);
  }
  MT_TRY(set_math(d, (cudnnMathType_t)out->math));
  return mt__cudnn_cache_put(d->device, &d->key, out);
}
#undef PICK_ALGO
#undef MAX_WS

/* the algorithm for kind and its workspace (*ws NULL when it needs none) */
static mt_status prepare(cudnnHandle_t h, conv_desc *d, int kind, const conv_args *io, mt__cudnn_conv_algo *a,
                         mt_tensor **ws) {
  *ws = NULL;
  MT_TRY(choose(h, d, kind, io, a));
  return scratch(ws, d->device, a->workspace);
}

/* alpha/beta scalars: double for double data, float otherwise */
typedef union scalar {
  float f;
  double d;
} scalar;
static scalar mk(const conv_desc *d, double v) {
  scalar s;
  if (d->dt == CUDNN_DATA_DOUBLE) s.d = v;
  else s.f = (float)v;
  return s;
}

static mt_status fwd_locked(cudnnHandle_t h, conv_desc *d, mt_tensor *y, const mt_tensor *x, const mt_tensor *w) {
  mt__cudnn_conv_algo a;
  mt_tensor *ws;
  conv_args io = {mt__data(x), mt__data(w), mt__data(y)};
  MT_TRY(prepare(h, d, MT_CUDNN_FWD, &io, &a, &ws));
  scalar one = mk(d, 1), zero = mk(d, 0);
  cudnnStatus_t st =
      cudnnConvolutionForward(h, &one, d->x, mt__data(x), d->w, mt__data(w), d->conv, (cudnnConvolutionFwdAlgo_t)a.algo,
                              ws ? mt__data(ws) : NULL, a.workspace, &zero, d->y, mt__data(y));
  if (ws) mt_tensor_release(ws); /* stream-ordered: reused only by work queued after this */
  if (st != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(st, OP, __FILE__, __LINE__);
  return MT_OK;
}

static mt_status bwd_data_locked(cudnnHandle_t h, conv_desc *d, mt_tensor *dx, const mt_tensor *dy,
                                 const mt_tensor *w) {
  mt__cudnn_conv_algo a;
  mt_tensor *ws;
  conv_args io = {mt__data(w), mt__data(dy), mt__data(dx)};
  MT_TRY(prepare(h, d, MT_CUDNN_BWD_DATA, &io, &a, &ws));
  scalar one = mk(d, 1), zero = mk(d, 0);
  cudnnStatus_t st = cudnnConvolutionBackwardData(h, &one, d->w, mt__data(w), d->y, mt__data(dy), d->conv,
                                                  (cudnnConvolutionBwdDataAlgo_t)a.algo, ws ? mt__data(ws) : NULL,
                                                  a.workspace, &zero, d->x, mt__data(dx));
  if (ws) mt_tensor_release(ws);
  if (st != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(st, OP, __FILE__, __LINE__);
  return MT_OK;
}

/* dw += scale * dL/dw (cuDNN's beta = 1 accumulates) */
static mt_status bwd_filter_locked(cudnnHandle_t h, conv_desc *d, mt_tensor *dw, const mt_tensor *x,
                                   const mt_tensor *dy, double scale) {
  mt__cudnn_conv_algo a;
  mt_tensor *ws, *sw = NULL;
  /* a search writes its trial results: into a scratch weight, never into the accumulated dw */
  d->key.kind = MT_CUDNN_BWD_FILTER;
  if (d->key.search && !mt__cudnn_cache_get(d->device, &d->key, &a))
    MT_TRY(scratch(&sw, d->device, (size_t)mt__numel(dw) * mt_dtype_size(dw->dtype)));
  conv_args io = {mt__data(x), mt__data(dy), sw ? mt__data(sw) : mt__data(dw)};
  mt_status ps = prepare(h, d, MT_CUDNN_BWD_FILTER, &io, &a, &ws);
  mt_tensor_release(sw);
  MT_TRY(ps);
  scalar one = mk(d, 1), sc = mk(d, scale);
  cudnnStatus_t st = cudnnConvolutionBackwardFilter(h, &sc, d->x, mt__data(x), d->y, mt__data(dy), d->conv,
                                                    (cudnnConvolutionBwdFilterAlgo_t)a.algo, ws ? mt__data(ws) : NULL,
                                                    a.workspace, &one, d->w, mt__data(dw));
  if (ws) mt_tensor_release(ws);
  if (st != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(st, OP, __FILE__, __LINE__);
  return MT_OK;
}

/* ---- the table's entries ---- */

/* The convolution's layout: the activation's when it is channels-last, else NCHW (an operand
 * that is neither is the caller's error: csrc/nn hands contiguous or channels-last tensors) */
static mt_status conv_layout(const mt_tensor *act, int *layout) {
  int l = layout_of(act);
  if (l < 0)
    return mt__error(MT_ERR_SHAPE,
                     OP
                     ": the CUDA convolution takes NCHW-contiguous or channels-last activations, got "
                     "strides %lldx%lldx%lldx%lld",
                     (long long)act->strides[0], (long long)act->strides[1], (long long)act->strides[2],
                     (long long)act->strides[3]);
  *layout = l;
  return MT_OK;
}

static void release_all(mt_tensor **t, int n) {
  for (int i = 0; i < n; i++) mt_tensor_release(t[i]);
}

/* Each pass runs in one layout: operands in the other one go through temporaries (in_layout),
 * results are converted back. *no_algo tells the caller that cuDNN had no algorithm in this
 * layout (then NCHW is tried: not every configuration has an NHWC kernel). */
static mt_status fwd_as(int layout, mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                        const mt_conv_geom *g, int *no_algo) {
  mt_tensor *tmp[3] = {NULL, NULL, NULL}; /* x, w, y */
  const mt_tensor *xu, *wu, *yu;
  conv_desc d;
  memset(&d, 0, sizeof d);
  mt_status st = in_layout(x, layout, 1, &tmp[0], &xu);
  if (st == MT_OK) st = in_layout(w, layout, 1, &tmp[1], &wu);
  if (st == MT_OK) st = in_layout(y, layout, 0, &tmp[2], &yu);
  if (st == MT_OK) st = desc_make(&d, xu, wu, yu, layout, g);
  cudnnHandle_t h;
  if (st == MT_OK) st = mt__cudnn_acquire(x->device, &h, OP);
  if (st == MT_OK) {
    st = fwd_locked(h, &d, (mt_tensor *)yu, xu, wu);
    mt__cudnn_release(x->device);
  }
  if (st == MT_OK && b) st = mt__cuda_conv_bias_add((mt_tensor *)yu, b);
  if (st == MT_OK && tmp[2]) st = mt__cuda_convert(y, tmp[2]);
  *no_algo = d.no_algo;
  desc_free(&d);
  release_all(tmp, 3);
  return st;
}

static mt_status bwd_data_as(int layout, mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w, const mt_conv_geom *g,
                             int *no_algo) {
  mt_tensor *tmp[3] = {NULL, NULL, NULL}; /* dx, w, dy */
  const mt_tensor *dxu, *wu, *dyu;
  conv_desc d;
  memset(&d, 0, sizeof d);
  mt_status st = in_layout(dx, layout, 0, &tmp[0], &dxu);
  if (st == MT_OK) st = in_layout(w, layout, 1, &tmp[1], &wu);
  if (st == MT_OK) st = in_layout(dy, layout, 1, &tmp[2], &dyu);
  if (st == MT_OK) st = desc_make(&d, dxu, wu, dyu, layout, g);
  cudnnHandle_t h;
  if (st == MT_OK) st = mt__cudnn_acquire(dx->device, &h, OP);
  if (st == MT_OK) {
    st = bwd_data_locked(h, &d, (mt_tensor *)dxu, dyu, wu);
    mt__cudnn_release(dx->device);
  }
  if (st == MT_OK && tmp[0]) st = mt__cuda_convert(dx, tmp[0]);
  *no_algo = d.no_algo;
  desc_free(&d);
  release_all(tmp, 3);
  return st;
}

static mt_status bwd_params_as(int layout, mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                               double scale, const mt_conv_geom *g, int *no_algo) {
  mt_tensor *tmp[3] = {NULL, NULL, NULL}; /* x, dw (holding its values: it accumulates), dy */
  const mt_tensor *xu, *dwu, *dyu;
  conv_desc d;
  memset(&d, 0, sizeof d);
  mt_status st = in_layout(x, layout, 1, &tmp[0], &xu);
  if (st == MT_OK) st = in_layout(dw, layout, 1, &tmp[1], &dwu);
  if (st == MT_OK) st = in_layout(dy, layout, 1, &tmp[2], &dyu);
  if (st == MT_OK) st = desc_make(&d, xu, dwu, dyu, layout, g);
  cudnnHandle_t h;
  if (st == MT_OK) st = mt__cudnn_acquire(x->device, &h, OP);
  if (st == MT_OK) {
    st = bwd_filter_locked(h, &d, (mt_tensor *)dwu, xu, dyu, scale);
    mt__cudnn_release(x->device);
  }
  if (st == MT_OK && tmp[1]) st = mt__cuda_convert(dw, tmp[1]);
  if (st == MT_OK && db) st = mt__cuda_conv_bias_grad(db, dyu, scale);
  *no_algo = d.no_algo;
  desc_free(&d);
  release_all(tmp, 3);
  return st;
}

mt_status mt__cuda_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                  const mt_conv_geom *g) {
  int layout = MT_CUDNN_NCHW, no_algo = 0;
  MT_TRY(conv_layout(x, &layout));
  mt_status st = fwd_as(layout, y, x, w, b, g, &no_algo);
  if (st != MT_OK && no_algo && layout == MT_CUDNN_NHWC) st = fwd_as(MT_CUDNN_NCHW, y, x, w, b, g, &no_algo);
  return st;
}

mt_status mt__cuda_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w,
                                         const mt_conv_geom *g) {
  int layout = MT_CUDNN_NCHW, no_algo = 0;
  MT_TRY(conv_layout(dx, &layout));
  mt_status st = bwd_data_as(layout, dx, dy, w, g, &no_algo);
  if (st != MT_OK && no_algo && layout == MT_CUDNN_NHWC) st = bwd_data_as(MT_CUDNN_NCHW, dx, dy, w, g, &no_algo);
  return st;
}

mt_status mt__cuda_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                          double scale, const mt_conv_geom *g) {
  int layout = MT_CUDNN_NCHW, no_algo = 0;
  MT_TRY(conv_layout(x, &layout));
  mt_status st = bwd_params_as(layout, dw, db, x, dy, scale, g, &no_algo);
  if (st != MT_OK && no_algo && layout == MT_CUDNN_NHWC)
    st = bwd_params_as(MT_CUDNN_NCHW, dw, db, x, dy, scale, g, &no_algo);
  return st;
}
