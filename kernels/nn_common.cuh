/* nn_common.cuh: what the nn kernel files (nn_*.cu, optim.cu) share on top of common.cuh:
 * float-only dtype dispatch, block reductions in double and reading a few device sums back. */
#ifndef MTK_NN_COMMON_CUH
#define MTK_NN_COMMON_CUH
#include "common.cuh"

/* nn layers are defined for floating dtypes only (the C side has checked that already) */
template <class F> static mt_status nnk_dispatch_float(int dtype, const char *op, F &&f) {
  switch (dtype) {
    case MT_F32: return f(mtk_tag<float>());
    case MT_F64: return f(mtk_tag<double>());
    case MT_F16: return f(mtk_tag<__half>());
    case MT_BF16: return f(mtk_tag<__nv_bfloat16>());
    default: return mt__error(MT_ERR_DTYPE, "%s: dtype %s is not supported on CUDA", op, mt_dtype_name(dtype));
  }
}

#define NNK_THREADS 256

/* pooling: the outputs [lo, hi] (inclusive; empty when lo > hi) of one dimension whose windows
 * (start o*d - p, length k) contain input position i (nn_pool.cu, nn_vol_pool.cu) */
MTK_D void nnk_cover(int64_t i, int k, int d, int p, int64_t on, int64_t *lo, int64_t *hi) {
  int64_t a = i + p - k + 1; /* o*d >= a */
  *lo = a <= 0 ? 0 : (a + d - 1) / d;
  int64_t b = (i + p) / d; /* o*d <= i + p */
  *hi = b < on - 1 ? b : on - 1;
}

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in
 * thread 0. sh: 32 doubles of shared memory. Ends with a barrier so sh can be reused. */
MTK_D double nnk_block_sum(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  int nw = (int)(blockDim.x >> 5);
  v = (int)threadIdx.x < nw ? sh[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

/* Epilogue of the kernels that accumulate two sums: acc[0] += block sum of a, then acc[1] +=
 * block sum of b (one atomic each from thread 0). */
MTK_D void nnk_block_sum2_add(double a, double b, double *sh, double *acc) {
  a = nnk_block_sum(a, sh);
  b = nnk_block_sum(b, sh);
  if (threadIdx.x == 0) {
    atomicAdd(acc, a);
    atomicAdd(acc + 1, b);
  }
}

/* grid of the reduction kernels: one block per NNK_THREADS elements, 1 to 1024 blocks (the
 * grid-stride loops cover the rest) */
static inline unsigned nnk_red_blocks(int64_t n) {
  int64_t b = (n + NNK_THREADS - 1) / NNK_THREADS;
  return (unsigned)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

/* a contiguous device buffer of n doubles (or int64s) filled from host memory */
static inline mt_status nnk_upload(mtk_temp &tmp, int device, cudaStream_t s, const void *host, int64_t n,
                                   mt_dtype dtype, const char *op) {
  int64_t m = n > 0 ? n : 1;
  MT_TRY(tmp.alloc_tensor(dtype, device, 1, &m));
  if (n > 0) MT_CUDA_TRY(cudaMemcpyAsync(mt__data(tmp.t), host, (size_t)n * 8, cudaMemcpyHostToDevice, s), op);
  return MT_OK;
}

/* n zeroed device doubles for atomic accumulation */
static inline mt_status nnk_zeros(mtk_temp &tmp, int device, cudaStream_t s, int64_t n, const char *op) {
  int64_t m = n > 0 ? n : 1;
  MT_TRY(tmp.alloc_tensor(MT_F64, device, 1, &m));
  MT_CUDA_TRY(cudaMemsetAsync(mt__data(tmp.t), 0, (size_t)m * sizeof(double), s), op);
  return MT_OK;
}

/* copy n device doubles to the host and wait for them */
static inline mt_status nnk_download(double *host, const mtk_temp &tmp, int64_t n, cudaStream_t s, const char *op) {
  MT_CUDA_TRY(cudaMemcpyAsync(host, mt__data(tmp.t), (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, s), op);
  MT_CUDA_TRY(cudaStreamSynchronize(s), op);
  return MT_OK;
}

#endif
