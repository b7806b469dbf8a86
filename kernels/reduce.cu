/* reduce.cu: sum, prod, mean, max/min (+ indices), argmax/argmin, var/std, p-norms, any/all over
 * one dimension or the whole tensor, with the CPU backend's semantics:
 *  - floating sums/means/products/variances accumulate in double, integers in int64;
 *  - max/min/argmax/argmin propagate NaN (the first NaN wins) and break ties by the lowest index;
 *    indices are written in `base`;
 *  - var/std use Welford's update merged with Chan's formula; p is the correction and the
 *    divisor max(0, n - p) (so n <= p gives NaN or inf, as PyTorch);
 *  - norm: p = 0 counts nonzeros, inf/-inf take max/min |x|, otherwise (sum |x|^p)^(1/p).
 *
 * Layout: the output (keepdim shape, the reduced dim of size 1) is walked by an offsets
 * calculator over a's strides, and the reduced dim by its stride, so no input copy is needed.
 * Two kernels: "rows" (one block per output, threads along the reduced dim, for a reduced dim
 * that is contiguous) and "columns" (32 adjacent outputs per block, 16 threads along the reduced
 * dim each, for reducing an outer dim). When outputs are too few to fill the GPU the reduced dim
 * is split across blocks that write partial states, merged by a third kernel. Full reductions
 * are the rows kernel on a contiguous input (copied first if needed) with a single output. */
#include "common.cuh"

/* ---- reduction operators: ident, step (one element at reduced position r), merge, write ---- */

template <class T> struct mtk_acc {
  typedef typename std::conditional<mtk_is_float<T>::value, double, int64_t>::type type;
};

/* sum and mean (mean only for floats: the entry point rejects integer means) */
template <class T> struct mtk_sum_op {
  typedef typename mtk_acc<T>::type acc_t;
  int mean;
  MTK_D acc_t ident() const { return 0; }
  MTK_D acc_t step(acc_t a, typename mtk_ct<T>::type x, int64_t) const { return merge(a, (acc_t)x); }
  MTK_D acc_t merge(acc_t a, acc_t b) const {
    if constexpr (mtk_is_float<T>::value) return a + b;
    else return (acc_t)((uint64_t)a + (uint64_t)b); /* wraps like the CPU's int64 sum */
  }
  MTK_D void write(acc_t a, int64_t n, void *out, int64_t *, int64_t) const {
    if (mean) a = (acc_t)((double)a / (double)n);
    mtk_st((T *)out, a);
  }
};

template <class T> struct mtk_prod_op {
  typedef typename mtk_acc<T>::type acc_t;
  MTK_D acc_t ident() const { return 1; }
  MTK_D acc_t step(acc_t a, typename mtk_ct<T>::type x, int64_t) const { return merge(a, (acc_t)x); }
  MTK_D acc_t merge(acc_t a, acc_t b) const {
    if constexpr (mtk_is_float<T>::value) return a * b;
    else return (acc_t)((uint64_t)a * (uint64_t)b); /* wraps like the CPU's int64 product */
  }
  MTK_D void write(acc_t a, int64_t, void *out, int64_t *, int64_t) const { mtk_st((T *)out, a); }
};

/* max/min with their position; `argout` writes the position into out (argmax/argmin) */
template <class T, bool MAX> struct mtk_extreme_op {
  typedef typename mtk_ct<T>::type CT;
  struct acc_t {
    CT v;
    int64_t i; /* -1: nothing seen yet */
  };
  int argout;
  MTK_D acc_t ident() const { return acc_t{(CT)0, -1}; }
  /* does b replace a? explicit index comparison makes the result independent of merge order */
  MTK_D bool better(const acc_t &b, const acc_t &a) const {
    if (b.i < 0) return false;
    if (a.i < 0) return true;
    bool bn = mtk_isnan(b.v), an = mtk_isnan(a.v);
    if (bn || an) return bn && (!an || b.i < a.i);
    if (b.v == a.v) return b.i < a.i;
    return MAX ? b.v > a.v : b.v < a.v;
  }
  MTK_D acc_t step(acc_t a, CT x, int64_t r) const {
    acc_t b{x, r};
    return better(b, a) ? b : a;
  }
  MTK_D acc_t merge(acc_t a, acc_t b) const { return better(b, a) ? b : a; }
  MTK_D void write(acc_t a, int64_t, void *out, int64_t *idx, int64_t base) const {
    if (argout) *(int64_t *)out = a.i + base;
    else mtk_st((T *)out, a.v);
    if (idx) *idx = a.i + base;
  }
};

/* variance and standard deviation (floats) */
template <class T> struct mtk_var_op {
  struct acc_t {
    double n, mean, m2;
  };
  double correction;
  int take_sqrt;
  MTK_D acc_t ident() const { return acc_t{0, 0, 0}; }
  MTK_D acc_t step(acc_t a, typename mtk_ct<T>::type x, int64_t) const {
    double v = (double)x, n = a.n + 1, d = v - a.mean, mean = a.mean + d / n;
    return acc_t{n, mean, a.m2 + d * (v - mean)};
  }
  MTK_D acc_t merge(acc_t a, acc_t b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    double n = a.n + b.n, d = b.mean - a.mean;
    return acc_t{n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
  }
  MTK_D void write(acc_t a, int64_t, void *out, int64_t *, int64_t) const {
    double div = a.n - correction;
    double v = a.m2 / (div > 0 ? div : 0.0);
    mtk_st((T *)out, take_sqrt ? sqrt(v) : v);
  }
};

enum { MTK_NORM_0, MTK_NORM_1, MTK_NORM_2, MTK_NORM_INF, MTK_NORM_NEGINF, MTK_NORM_P };

template <class T, int MODE> struct mtk_norm_op {
  typedef double acc_t;
  double p;
  MTK_D acc_t ident() const { return MODE == MTK_NORM_NEGINF ? (double)INFINITY : 0.0; }
  MTK_D acc_t step(acc_t a, typename mtk_ct<T>::type x, int64_t) const {
    double v = fabs((double)x);
    if constexpr (MODE == MTK_NORM_0) return a + (x != 0);
    else if constexpr (MODE == MTK_NORM_1) return a + v;
    else if constexpr (MODE == MTK_NORM_2) return a + v * v;
    else if constexpr (MODE == MTK_NORM_P) return a + pow(v, p);
    else return merge(a, v);
  }
  MTK_D acc_t merge(acc_t a, acc_t b) const {
    if constexpr (MODE == MTK_NORM_INF || MODE == MTK_NORM_NEGINF) {
      if (a != a) return a; /* NaN propagates */
      if (b != b) return b;
      return (MODE == MTK_NORM_INF ? b > a : b < a) ? b : a;
    } else {
      return a + b;
    }
  }
  MTK_D void write(acc_t a, int64_t, void *out, int64_t *, int64_t) const {
    if constexpr (MODE == MTK_NORM_2) a = sqrt(a);
    else if constexpr (MODE == MTK_NORM_P) a = pow(a, 1.0 / p);
    mtk_st((T *)out, a);
  }
};

template <class T, bool ALL> struct mtk_anyall_op {
  typedef int acc_t;
  MTK_D acc_t ident() const { return ALL ? 1 : 0; }
  MTK_D acc_t step(acc_t a, typename mtk_ct<T>::type x, int64_t) const { return ALL ? (a & (x != 0)) : (a | (x != 0)); }
  MTK_D acc_t merge(acc_t a, acc_t b) const { return ALL ? (a & b) : (a | b); }
  MTK_D void write(acc_t a, int64_t, void *out, int64_t *, int64_t) const { *(uint8_t *)out = (uint8_t)a; }
};

/* ---- block-level tree reduction with warp shuffles ---- */

template <class A> MTK_D A mtk_shfl_down(A v, int d) {
  static_assert(sizeof(A) % 4 == 0, "accumulator must be a whole number of 32-bit words");
  union {
    A a;
    int w[sizeof(A) / 4];
  } u;
  u.a = v;
#pragma unroll
  for (int k = 0; k < (int)(sizeof(A) / 4); k++) u.w[k] = __shfl_down_sync(0xffffffffu, u.w[k], d);
  return u.a;
}

template <class Op> MTK_D typename Op::acc_t mtk_warp_reduce(const Op &op, typename Op::acc_t v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v = op.merge(v, mtk_shfl_down(v, d));
  return v;
}

/* result valid in thread 0; blockDim.x a multiple of 32; smem holds 32 accumulators */
template <class Op>
MTK_D typename Op::acc_t mtk_block_reduce(const Op &op, typename Op::acc_t v, typename Op::acc_t *smem) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = mtk_warp_reduce(op, v);
  if (nwarps == 1) return v;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? smem[lane] : op.ident();
    v = mtk_warp_reduce(op, v);
  }
  __syncthreads(); /* smem is reused by the caller's next output */
  return v;
}

/* ---- kernels ---- */

struct mtk_reduce_args {
  mtk_offsets<3> oc;            /* over the output's index space: a, out, indices */
  int64_t M, R, rstride, chunk; /* outputs, reduced length, its stride, positions per split */
  int G;                        /* splits of the reduced dim (1: write results directly) */
  int64_t base;
};

template <class Op> MTK_D void mtk_reduce_write(const Op &op, const mtk_reduce_args &g, typename Op::acc_t acc,
                                                int64_t o, char *out, size_t out_es, int64_t *idx) {
  int64_t off[3];
  g.oc.get(o, off);
  op.write(acc, g.R, out + off[1] * (int64_t)out_es, idx ? idx + off[2] : nullptr, g.base);
}

/* one block per (output, split); threads stride along the reduced dim */
template <class Op, class T> __global__ void __launch_bounds__(512)
    mtk_reduce_rows(Op op, const T *a, char *out, size_t out_es, int64_t *idx, mtk_reduce_args g,
                    typename Op::acc_t *partial) {
  typedef typename Op::acc_t A;
  __shared__ alignas(16) unsigned char smem_raw[32 * sizeof(A)];
  A *smem = (A *)smem_raw;
  int64_t r0 = (int64_t)blockIdx.y * g.chunk, r1 = min(g.R, r0 + g.chunk);
  for (int64_t o = blockIdx.x; o < g.M; o += gridDim.x) {
    int64_t off[3];
    g.oc.get(o, off);
    const T *p = a + off[0];
    A acc = op.ident();
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) acc = op.step(acc, mtk_ld(p + r * g.rstride), r);
    acc = mtk_block_reduce(op, acc, smem);
    if (threadIdx.x == 0) {
      if (g.G == 1) op.write(acc, g.R, out + off[1] * (int64_t)out_es, idx ? idx + off[2] : nullptr, g.base);
      else partial[o * g.G + blockIdx.y] = acc;
    }
  }
}

#define MTK_COL_Y 16
/* 32 adjacent outputs per block (threadIdx.x), MTK_COL_Y threads along the reduced dim each */
template <class Op, class T> __global__ void __launch_bounds__(32 * MTK_COL_Y)
    mtk_reduce_cols(Op op, const T *a, char *out, size_t out_es, int64_t *idx, mtk_reduce_args g,
                    typename Op::acc_t *partial) {
  typedef typename Op::acc_t A;
  __shared__ alignas(16) unsigned char smem_raw[32 * MTK_COL_Y * sizeof(A)];
  A *smem = (A *)smem_raw;
  int64_t o = (int64_t)blockIdx.x * 32 + threadIdx.x;
  int64_t r0 = (int64_t)blockIdx.y * g.chunk, r1 = min(g.R, r0 + g.chunk);
  A acc = op.ident();
  int64_t off[3] = {0, 0, 0};
  if (o < g.M) {
    g.oc.get(o, off);
    const T *p = a + off[0];
    for (int64_t r = r0 + threadIdx.y; r < r1; r += MTK_COL_Y) acc = op.step(acc, mtk_ld(p + r * g.rstride), r);
  }
  smem[threadIdx.y * 32 + threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && o < g.M) {
    for (int y = 1; y < MTK_COL_Y; y++) acc = op.merge(acc, smem[y * 32 + threadIdx.x]);
    if (g.G == 1) op.write(acc, g.R, out + off[1] * (int64_t)out_es, idx ? idx + off[2] : nullptr, g.base);
    else partial[o * g.G + blockIdx.y] = acc;
  }
}

/* merge the G partial states of each output (one warp per output) */
template <class Op> __global__ void mtk_reduce_finish(Op op, char *out, size_t out_es, int64_t *idx, mtk_reduce_args g,
                                                      const typename Op::acc_t *partial) {
  typedef typename Op::acc_t A;
  for (int64_t o = blockIdx.x; o < g.M; o += gridDim.x) {
    A acc = op.ident();
    for (int k = threadIdx.x; k < g.G; k += 32) acc = op.merge(acc, partial[o * g.G + k]);
    acc = mtk_warp_reduce(op, acc);
    if (threadIdx.x == 0) mtk_reduce_write(op, g, acc, o, out, out_es, idx);
  }
}

/* ---- host side ---- */

/* enough blocks to keep every SM of an H100-class GPU busy several times over */
#define MTK_REDUCE_TARGET_BLOCKS 2048

static int64_t mtk_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class Op, class T> static mt_status mtk_reduce_launch(const Op &op, const char *opname, mt_tensor *out,
                                                                mt_tensor *indices, const mt_tensor *a, int dim,
                                                                int64_t base) {
  typedef typename Op::acc_t A;
  int device = a->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_reduce_args g;
  mtk_temp contig;
  const T *ap = mtk_ptr<T>(a);
  bool rows;
  if (dim < 0) {
    /* whole tensor: flat row-major positions, so a strided input is made contiguous first */
    g.R = mt__numel(a);
    g.M = 1;
    g.rstride = 1;
    if (!mt__is_contiguous(a) && g.R > 0) {
      MT_TRY(contig.alloc_tensor(a->dtype, device, a->ndim, a->sizes));
      MT_TRY(mtk_copy_same(contig.t, a, opname));
      ap = contig.as<T>();
    }
    memset(&g.oc, 0, sizeof g.oc);
    g.oc.small = 1;
    rows = true;
  } else {
    g.R = a->sizes[dim];
    g.rstride = a->strides[dim];
    int64_t sizes[MT_MAX_DIMS];
    static const int64_t zeros[MT_MAX_DIMS] = {0};
    memcpy(sizes, a->sizes, sizeof sizes);
    sizes[dim] = 1;
    const int64_t *st[3] = {a->strides, out->strides, indices ? indices->strides : zeros};
    mtk_make_offsets<3>(&g.oc, a->ndim, sizes, st);
    g.M = 1;
    for (int d = 0; d < a->ndim; d++) g.M *= sizes[d];
    /* rows (a block per output) pay off for long reduced dims, unless neighbouring outputs are
     * neighbours in memory and the reduced dim is not: then columns read coalesced. Short
     * reduced dims take columns too, so threads are not left idle. */
    bool adjacent = g.oc.ndim > 0 && g.oc.strides[0][g.oc.ndim - 1] == 1;
    rows = g.M == 1 || (g.R >= 64 && (g.rstride == 1 || !adjacent));
  }
  if (g.M == 0) return MT_OK;
  g.base = base;
  g.G = 1;
  int64_t blocks = rows ? g.M : mtk_ceil_div(g.M, 32);
  int64_t min_chunk = rows ? 4096 : 256;
  if (blocks < MTK_REDUCE_TARGET_BLOCKS && g.R >= 2 * min_chunk) {
    int64_t G = mtk_ceil_div(MTK_REDUCE_TARGET_BLOCKS, blocks);
    int64_t most = mtk_ceil_div(g.R, min_chunk);
    G = G < most ? G : most;
    g.G = (int)(G < 65535 ? G : 65535);
  }
  g.chunk = mtk_ceil_div(g.R > 0 ? g.R : 1, g.G);
  mtk_temp partial;
  if (g.G > 1) MT_TRY(partial.alloc(device, (size_t)g.M * g.G * sizeof(A)));
  A *pp = g.G > 1 ? partial.as<A>() : nullptr;
  char *outp = mt__data(out);
  size_t out_es = mt__dtype_size(out->dtype);
  int64_t *idxp = indices ? mtk_ptr<int64_t>(indices) : nullptr;
  if (rows) {
    int threads = 32;
    while (threads < 512 && threads < g.chunk) threads *= 2;
    dim3 grid((unsigned)(g.M < (1 << 20) ? g.M : (1 << 20)), (unsigned)g.G);
    mtk_reduce_rows<Op, T><<<grid, threads, 0, s>>>(op, ap, outp, out_es, idxp, g, pp);
  } else {
    dim3 grid((unsigned)mtk_ceil_div(g.M, 32), (unsigned)g.G), block(32, MTK_COL_Y);
    mtk_reduce_cols<Op, T><<<grid, block, 0, s>>>(op, ap, outp, out_es, idxp, g, pp);
  }
  MT_CUDA_LAUNCH_CHECK(opname);
  if (g.G > 1) {
    unsigned nb = (unsigned)(g.M < (1 << 20) ? g.M : (1 << 20));
    mtk_reduce_finish<Op><<<nb, 32, 0, s>>>(op, outp, out_es, idxp, g, pp);
    MT_CUDA_LAUNCH_CHECK(opname);
  }
  return MT_OK;
}

#define MTK_REDUCE_NAME(E, NAME, KIND, ...) NAME,
static const char *const mtk_reduce_names[] = {MT_REDUCE_OPS(MTK_REDUCE_NAME, ~)}; /* in enum order */
static_assert(sizeof mtk_reduce_names / sizeof mtk_reduce_names[0] == MT_NUM_REDUCE_OPS, "one name per reduction");

template <class T> static mt_status mtk_reduce_typed(mt_reduce_op op, const char *name, mt_tensor *out, mt_tensor *idx,
                                                     const mt_tensor *a, int dim, double p, int64_t base) {
  const bool fl = mtk_is_float<T>::value;
  switch (op) {
    case MT_SUM: return mtk_reduce_launch<mtk_sum_op<T>, T>(mtk_sum_op<T>{0}, name, out, idx, a, dim, base);
    case MT_PROD: return mtk_reduce_launch<mtk_prod_op<T>, T>(mtk_prod_op<T>{}, name, out, idx, a, dim, base);
    case MT_MAX:
    case MT_ARGMAX:
      return mtk_reduce_launch<mtk_extreme_op<T, true>, T>(mtk_extreme_op<T, true>{op == MT_ARGMAX}, name, out, idx, a,
                                                           dim, base);
    case MT_MIN:
    case MT_ARGMIN:
      return mtk_reduce_launch<mtk_extreme_op<T, false>, T>(mtk_extreme_op<T, false>{op == MT_ARGMIN}, name, out, idx,
                                                            a, dim, base);
    case MT_ANY:
      return mtk_reduce_launch<mtk_anyall_op<T, false>, T>(mtk_anyall_op<T, false>{}, name, out, idx, a, dim, base);
    case MT_ALL:
      return mtk_reduce_launch<mtk_anyall_op<T, true>, T>(mtk_anyall_op<T, true>{}, name, out, idx, a, dim, base);
    default: break;
  }
  /* the rest are floating point only; integer instantiations are never generated */
  if constexpr (fl) {
    switch (op) {
      case MT_MEAN: return mtk_reduce_launch<mtk_sum_op<T>, T>(mtk_sum_op<T>{1}, name, out, idx, a, dim, base);
      case MT_VAR:
      case MT_STD:
        return mtk_reduce_launch<mtk_var_op<T>, T>(mtk_var_op<T>{p, op == MT_STD}, name, out, idx, a, dim, base);
      case MT_NORM:
        if (p == 0) return mtk_reduce_launch<mtk_norm_op<T, MTK_NORM_0>, T>({p}, name, out, idx, a, dim, base);
        if (p == 1) return mtk_reduce_launch<mtk_norm_op<T, MTK_NORM_1>, T>({p}, name, out, idx, a, dim, base);
        if (p == 2) return mtk_reduce_launch<mtk_norm_op<T, MTK_NORM_2>, T>({p}, name, out, idx, a, dim, base);
        if (isinf(p) && p > 0)
          return mtk_reduce_launch<mtk_norm_op<T, MTK_NORM_INF>, T>({p}, name, out, idx, a, dim, base);
        if (isinf(p)) return mtk_reduce_launch<mtk_norm_op<T, MTK_NORM_NEGINF>, T>({p}, name, out, idx, a, dim, base);
        return mtk_reduce_launch<mtk_norm_op<T, MTK_NORM_P>, T>({p}, name, out, idx, a, dim, base);
      default: break;
    }
  }
  return mt__error(MT_ERR_DTYPE, "%s: not defined for dtype %s", name, mt_dtype_name(a->dtype));
}

extern "C" mt_status mt__cuda_reduce(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim,
                                     double p, int64_t base) {
  if ((int)op < 0 || op >= MT_NUM_REDUCE_OPS) return mt__error(MT_ERR_ARG, "reduce: unknown operation %d", (int)op);
  const char *name = mtk_reduce_names[op];
  if (mt__numel(out) == 0) return MT_OK;
  if (a->ndim == 0) dim = -1;
  if (dim >= a->ndim)
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for %d dimensions", name, dim + 1, a->ndim);
  int want = (op == MT_ARGMAX || op == MT_ARGMIN) ? MT_I64 : (op == MT_ANY || op == MT_ALL) ? MT_U8 : (int)a->dtype;
  if ((int)out->dtype != want)
    return mt__error(MT_ERR_DTYPE, "%s: result has dtype %s, expected %s", name, mt_dtype_name(out->dtype),
                     mt_dtype_name(want));
  if (indices && indices->dtype != MT_I64)
    return mt__error(MT_ERR_DTYPE, "%s: indices have dtype %s, expected int64", name, mt_dtype_name(indices->dtype));
  if (indices && op != MT_MAX && op != MT_MIN && op != MT_ARGMAX && op != MT_ARGMIN) indices = NULL;
  return mtk_dispatch(a->dtype, name, [&](auto tag) {
    typedef typename decltype(tag)::type T;
    return mtk_reduce_typed<T>(op, name, out, indices, a, dim, p, base);
  });
}
