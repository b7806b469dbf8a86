/* nn_normalize.cu: nn.Normalize on CUDA, the formulas of csrc/cpu/nn_normalize.c: one block per
 * row, the row's p-th power sum (or max |x|, p = inf) and sum x g by block reductions in double. */
#include "nn_common.cuh"

enum { NRM_P1, NRM_P2, NRM_PANY, NRM_PINF };

MTK_D double nrmk_pow(double a, double p, int kind) { return kind == NRM_P2 ? a * a : kind == NRM_P1 ? a : pow(a, p); }
MTK_D double nrmk_sign(double v) { return (double)(v > 0) - (double)(v < 0); }
MTK_D double nrmk_norm(double s, double p, double eps, int kind) {
  return kind == NRM_PINF ? s + eps : kind == NRM_P2 ? sqrt(s + eps) : kind == NRM_P1 ? s + eps : pow(s + eps, 1 / p);
}

/* block max of v (v >= 0 or NaN; NaN wins), valid in every thread */
MTK_D double nrmk_block_max(double v, double *sh, double *bc) {
  for (int o = 16; o > 0; o >>= 1) {
    double u = __shfl_down_sync(0xffffffffu, v, o);
    v = u > v || isnan(u) ? u : v;
  }
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double b = 0;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++) b = sh[w] > b || isnan(sh[w]) ? sh[w] : b;
    *bc = b;
  }
  __syncthreads();
  v = *bc;
  __syncthreads();
  return v;
}

/* s = sum |x|^p (max |x|) and c = sum x g (g may be NULL) of one row, valid in every thread */
template <class T> MTK_D void nrmk_stats(const T *xr, const T *gr, int64_t D, double p, int kind, double *sh,
                                         double *bc, double *s, double *c) {
  double a = 0, b = 0;
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
    double v = (double)mtk_ld(xr + d), av = fabs(v);
    a = kind == NRM_PINF ? (av > a || isnan(av) ? av : a) : a + nrmk_pow(av, p, kind);
    if (gr) b += v * (double)mtk_ld(gr + d);
  }
  if (kind == NRM_PINF) {
    a = nrmk_block_max(a, sh, bc);
  } else {
    a = nnk_block_sum(a, sh);
    if (threadIdx.x == 0) *bc = a;
    __syncthreads();
    a = *bc;
    __syncthreads();
  }
  if (gr) {
    b = nnk_block_sum(b, sh);
    if (threadIdx.x == 0) *bc = b;
    __syncthreads();
    b = *bc;
    __syncthreads();
  }
  *s = a, *c = b;
}

template <class T>
__global__ void nnk_normalize_fwd(const T *x, T *y, int64_t N, int64_t D, double p, double eps, int kind) {
  __shared__ double sh[32];
  __shared__ double bc;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T *xr = x + row * D;
    T *yr = y + row * D;
    double s, c;
    nrmk_stats<T>(xr, (const T *)NULL, D, p, kind, sh, &bc, &s, &c);
    double inv = 1 / nrmk_norm(s, p, eps, kind);
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x)
      mtk_st(yr + d, (typename mtk_ct<T>::type)((double)mtk_ld(xr + d) * inv));
  }
}

template <class T>
__global__ void nnk_normalize_bwd(const T *x, const T *g, T *r, int64_t N, int64_t D, double p, double eps, int kind) {
  __shared__ double sh[32];
  __shared__ double bc;
  __shared__ unsigned long long kmin;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T *xr = x + row * D, *gr = g + row * D;
    T *rr = r + row * D;
    double s, c;
    nrmk_stats<T>(xr, gr, D, p, kind, sh, &bc, &s, &c);
    double n = nrmk_norm(s, p, eps, kind), a = 1 / n;
    double b = kind == NRM_PINF ? c / (n * n) : c / ((s + eps) * n);
    if (kind == NRM_PINF) { /* the first position of the max, as the CPU takes it */
      if (threadIdx.x == 0) kmin = ~0ull;
      __syncthreads();
      for (int64_t d = threadIdx.x; d < D; d += blockDim.x)
        if (fabs((double)mtk_ld(xr + d)) == s) atomicMin(&kmin, (unsigned long long)d);
      __syncthreads();
    }
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      double v = (double)mtk_ld(xr + d), gv = (double)mtk_ld(gr + d);
      double q = kind == NRM_P2     ? v
                 : kind == NRM_P1   ? nrmk_sign(v)
                 : kind == NRM_PINF ? ((unsigned long long)d == kmin ? nrmk_sign(v) : 0.0)
                                    : nrmk_sign(v) * pow(fabs(v), p - 1);
      mtk_st(rr + d, (typename mtk_ct<T>::type)(gv * a - q * b));
    }
    __syncthreads();
  }
}

#define NRM_OP "nn.Normalize"

static int nrmk_kind(double p) { return isinf(p) ? NRM_PINF : p == 2 ? NRM_P2 : p == 1 ? NRM_P1 : NRM_PANY; }
static unsigned nrmk_blocks(int64_t rows) {
  return (unsigned)(rows < MTK_MAX_BLOCKS ? (rows < 1 ? 1 : rows) : MTK_MAX_BLOCKS);
}

extern "C" mt_status mt__cuda_normalize_forward(mt_tensor *y, const mt_tensor *x, int64_t N, int64_t D, double p,
                                                double eps) {
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, NRM_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_normalize_fwd<T>
        <<<nrmk_blocks(N), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), N, D, p, eps, nrmk_kind(p));
    MT_CUDA_LAUNCH_CHECK(NRM_OP);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_normalize_backward(mt_tensor *r, const mt_tensor *x, const mt_tensor *g, int64_t N,
                                                 int64_t D, double p, double eps) {
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, NRM_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_normalize_bwd<T><<<nrmk_blocks(N), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(g), mtk_ptr<T>(r), N, D, p,
                                                                eps, nrmk_kind(p));
    MT_CUDA_LAUNCH_CHECK(NRM_OP);
    return MT_OK;
  });
}
