/* cudnn_conv.c: 2-d convolution on CUDA through cuDNN (the backend table's conv2d_* entries).
 * The first time a (kind, shapes, strides, paddings, dilations, groups, dtype) key is seen the
 * algorithm comes from cuDNN's heuristics (cudnnGet*Algorithm_v7: no trial runs, so no
 * allocations or kernel launches while choosing) and is cached per device handle. float32 and
 * float64 exclude tensor-op (TF32) algorithms so results stay within float rounding of the CPU;
 * float16/bfloat16 allow them. Workspaces come from the caching allocator. */
#include <limits.h>
#include <string.h>
#include "cudnn_common.h"

#define OP "nn.SpatialConvolution"
/* beyond this a choice is skipped for the next one: a workspace must not crowd out the model */
#define WS_LIMIT ((size_t)1 << 30)

typedef struct conv_desc {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnDataType_t dt;
  int dtype, device;
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

/* descriptors for x (N C H W), w (O C/g kH kW) and y (N O oH oW) */
static mt_status desc_make(conv_desc *d, const mt_tensor *x, const mt_tensor *w, const mt_tensor *y, int sW, int sH,
                           int pW, int pH, int dW, int dH, int groups) {
  memset(d, 0, sizeof *d);
  d->dtype = x->dtype;
  d->device = x->device;
  if (mt__cudnn_dtype(x->dtype, &d->dt))
    return mt__error(MT_ERR_DTYPE, OP ": dtype %s is not supported on CUDA", mt_dtype_name(x->dtype));
  MT_TRY(fits_int(x, "the input"));
  MT_TRY(fits_int(w, "the weight"));
  MT_TRY(fits_int(y, "the output"));
  mt__cudnn_conv_key *k = &d->key;
  k->dtype = x->dtype, k->groups = groups;
  k->N = (int)x->sizes[0], k->C = (int)x->sizes[1], k->H = (int)x->sizes[2], k->W = (int)x->sizes[3];
  k->O = (int)w->sizes[0], k->kH = (int)w->sizes[2], k->kW = (int)w->sizes[3];
  k->sH = sH, k->sW = sW, k->pH = pH, k->pW = pW, k->dH = dH, k->dW = dW;
  /* float16/bfloat16 accumulate in float (cuDNN's "pseudo half" configurations) */
  cudnnDataType_t compute = d->dt == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  MT_CUDNN_TRY(cudnnCreateTensorDescriptor(&d->x), OP);
  MT_CUDNN_TRY(cudnnCreateTensorDescriptor(&d->y), OP);
  MT_CUDNN_TRY(cudnnCreateFilterDescriptor(&d->w), OP);
  MT_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&d->conv), OP);
  MT_CUDNN_TRY(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, d->dt, k->N, k->C, k->H, k->W), OP);
  MT_CUDNN_TRY(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, d->dt, (int)y->sizes[0], (int)y->sizes[1],
                                          (int)y->sizes[2], (int)y->sizes[3]),
               OP);
  MT_CUDNN_TRY(cudnnSetFilter4dDescriptor(d->w, d->dt, CUDNN_TENSOR_NCHW, k->O, (int)w->sizes[1], k->kH, k->kW), OP);
  MT_CUDNN_TRY(cudnnSetConvolution2dDescriptor(d->conv, pH, pW, sH, sW, dH, dW, CUDNN_CROSS_CORRELATION, compute), OP);
  MT_CUDNN_TRY(cudnnSetConvolutionGroupCount(d->conv, groups), OP);
  return MT_OK;
}

static int half_type(const conv_desc *d) { return d->dt == CUDNN_DATA_HALF || d->dt == CUDNN_DATA_BFLOAT16; }

/* whether an algorithm found with math type `math` may be used for this dtype */
static int math_ok(const conv_desc *d, cudnnMathType_t math) {
  return half_type(d) || math == CUDNN_DEFAULT_MATH || math == CUDNN_FMA_MATH;
}

/* Set the math type before asking: float32/float64 FMA only (no TF32), halves tensor ops. */
static mt_status set_math(conv_desc *d, cudnnMathType_t math) {
  MT_CUDNN_TRY(cudnnSetConvolutionMathType(d->conv, math), OP);
  return MT_OK;
}

/* found = 1 and *out = the first of the n heuristic results (best first) that ran, fits WS_LIMIT
 * and has an allowed math type; a macro because the three perf struct types only share fields */
#define PICK_ALGO(perf, n, d, out, found)                                                                     \
  for (int i = 0; i < (n) && !(found); i++)                                                                   \
    if ((perf)[i].status == CUDNN_STATUS_SUCCESS && (perf)[i].memory <= WS_LIMIT &&                           \
        math_ok((d), (perf)[i].mathType)) {                                                                   \
      (out)->algo = (int)(perf)[i].algo, (out)->math = (int)(perf)[i].mathType,                               \
      (out)->workspace = (perf)[i].memory;                                                                    \
      (found) = 1;                                                                                            \
    }

/* the cached choice for d->key (kind set), or a new one from the heuristics */
static mt_status choose(cudnnHandle_t h, conv_desc *d, int kind, mt__cudnn_conv_algo *out) {
  d->key.kind = kind;
  MT_TRY(set_math(d, half_type(d) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  if (mt__cudnn_cache_get(d->device, &d->key, out)) return set_math(d, (cudnnMathType_t)out->math);
  int n = 0, found = 0;
  if (kind == MT_CUDNN_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    MT_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->w, d->conv, d->y,
                                                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
                 OP);
    PICK_ALGO(perf, n, d, out, found);
  } else if (kind == MT_CUDNN_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    MT_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d->w, d->y, d->conv, d->x,
                                                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                 OP);
    PICK_ALGO(perf, n, d, out, found);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    MT_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d->x, d->y, d->conv, d->w,
                                                               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                 OP);
    PICK_ALGO(perf, n, d, out, found);
  }
  if (!found)
    return mt__error(MT_ERR_CUDA, OP ": cuDNN has no algorithm for input %dx%dx%dx%d, weight %dx%dx%dx%d, %s",
                     d->key.N, d->key.C, d->key.H, d->key.W, d->key.O, d->key.C / d->key.groups, d->key.kH,
                     d->key.kW, mt_dtype_name(d->dtype));
  MT_TRY(set_math(d, (cudnnMathType_t)out->math));
  return mt__cudnn_cache_put(d->device, &d->key, out);
}
#undef PICK_ALGO

/* the algorithm for kind and its workspace (*ws NULL when it needs none) */
static mt_status prepare(cudnnHandle_t h, conv_desc *d, int kind, mt__cudnn_conv_algo *a, mt_tensor **ws) {
  *ws = NULL;
  MT_TRY(choose(h, d, kind, a));
  if (a->workspace == 0) return MT_OK;
  int64_t m = (int64_t)a->workspace;
  return mt__tensor_empty(ws, MT_U8, d->device, 1, &m);
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

static mt_status fwd_locked(cudnnHandle_t h, conv_desc *d, mt_tensor *y, const mt_tensor *x, const mt_tensor *w,
                            const mt_tensor *b) {
  mt__cudnn_conv_algo a;
  mt_tensor *ws;
  MT_TRY(prepare(h, d, MT_CUDNN_FWD, &a, &ws));
  scalar one = mk(d, 1), zero = mk(d, 0);
  cudnnStatus_t st = cudnnConvolutionForward(h, &one, d->x, mt__data(x), d->w, mt__data(w), d->conv,
                                             (cudnnConvolutionFwdAlgo_t)a.algo, ws ? mt__data(ws) : NULL, a.workspace,
                                             &zero, d->y, mt__data(y));
  if (ws) mt_tensor_release(ws); /* stream-ordered: reused only by work queued after this */
  if (st != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(st, OP, __FILE__, __LINE__);
  return b ? mt__cuda_conv_bias_add(y, b) : MT_OK;
}

static mt_status bwd_data_locked(cudnnHandle_t h, conv_desc *d, mt_tensor *dx, const mt_tensor *dy,
                                 const mt_tensor *w) {
  mt__cudnn_conv_algo a;
  mt_tensor *ws;
  MT_TRY(prepare(h, d, MT_CUDNN_BWD_DATA, &a, &ws));
  scalar one = mk(d, 1), zero = mk(d, 0);
  cudnnStatus_t st = cudnnConvolutionBackwardData(h, &one, d->w, mt__data(w), d->y, mt__data(dy), d->conv,
                                                  (cudnnConvolutionBwdDataAlgo_t)a.algo, ws ? mt__data(ws) : NULL,
                                                  a.workspace, &zero, d->x, mt__data(dx));
  if (ws) mt_tensor_release(ws);
  if (st != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(st, OP, __FILE__, __LINE__);
  return MT_OK;
}

/* dw += scale * dL/dw (cuDNN's beta = 1 accumulates) and db += scale * dL/db */
static mt_status bwd_filter_locked(cudnnHandle_t h, conv_desc *d, mt_tensor *dw, mt_tensor *db, const mt_tensor *x,
                                   const mt_tensor *dy, double scale) {
  mt__cudnn_conv_algo a;
  mt_tensor *ws;
  MT_TRY(prepare(h, d, MT_CUDNN_BWD_FILTER, &a, &ws));
  scalar one = mk(d, 1), sc = mk(d, scale);
  cudnnStatus_t st = cudnnConvolutionBackwardFilter(h, &sc, d->x, mt__data(x), d->y, mt__data(dy), d->conv,
                                                    (cudnnConvolutionBwdFilterAlgo_t)a.algo, ws ? mt__data(ws) : NULL,
                                                    a.workspace, &one, d->w, mt__data(dw));
  if (ws) mt_tensor_release(ws);
  if (st != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(st, OP, __FILE__, __LINE__);
  return db ? mt__cuda_conv_bias_grad(db, dy, scale) : MT_OK;
}

mt_status mt__cuda_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                     const mt_conv_geom *g) {
  conv_desc d;
  mt_status st = desc_make(&d, x, w, y, (int)g->sW, (int)g->sH, (int)g->pW, (int)g->pH, (int)g->dW, (int)g->dH,
                           (int)g->groups);
  cudnnHandle_t h;
  if (st == MT_OK) st = mt__cudnn_acquire(x->device, &h, OP);
  if (st == MT_OK) {
    st = fwd_locked(h, &d, y, x, w, b);
    mt__cudnn_release(x->device);
  }
  desc_free(&d);
  return st;
}

mt_status mt__cuda_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w,
                                            const mt_conv_geom *g) {
  conv_desc d;
  mt_status st = desc_make(&d, dx, w, dy, (int)g->sW, (int)g->sH, (int)g->pW, (int)g->pH, (int)g->dW, (int)g->dH,
                           (int)g->groups);
  cudnnHandle_t h;
  if (st == MT_OK) st = mt__cudnn_acquire(dx->device, &h, OP);
  if (st == MT_OK) {
    st = bwd_data_locked(h, &d, dx, dy, w);
    mt__cudnn_release(dx->device);
  }
  desc_free(&d);
  return st;
}

mt_status mt__cuda_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                             double scale, const mt_conv_geom *g) {
  conv_desc d;
  mt_status st = desc_make(&d, x, dw, dy, (int)g->sW, (int)g->sH, (int)g->pW, (int)g->pH, (int)g->dW, (int)g->dH,
                           (int)g->groups);
  cudnnHandle_t h;
  if (st == MT_OK) st = mt__cudnn_acquire(x->device, &h, OP);
  if (st == MT_OK) {
    st = bwd_filter_locked(h, &d, dw, db, x, dy, scale);
    mt__cudnn_release(x->device);
  }
  desc_free(&d);
  return st;
}
