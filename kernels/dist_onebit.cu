/* dist_onebit.cu: the CUDA bodies of 1-bit compression with error feedback (the slots
 * dist_onebit_encode and dist_onebit_decode; csrc/dist/onebit.c checks the arguments), with the
 * CPU bodies' arithmetic (csrc/cpu/dist_onebit.c): the scale's sum in double, the blocks added
 * in block order, so CUDA and CPU agree to rounding. Both are queued on the device's stream. */
#include "common.cuh"

namespace {

constexpr int THREADS = 256;

/* one thread block per chunk: the gradient into the residual and the mean magnitude, then one
 * thread per byte of bits (after the barrier, so every addition is visible) */
__global__ void encode(float *x, const float *grad, uint8_t *code, float *scale, long long n, long long chunk) {
  __shared__ double partial[THREADS];
  long long lo = (long long)blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  double sum = 0;
  for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    if (grad) x[i] += grad[i];
    sum += fabsf(x[i]);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  float s = (float)(partial[0] / (double)(hi - lo));
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
  for (long long byte = lo / 8 + threadIdx.x; byte * 8 < hi; byte += blockDim.x) {
    unsigned packed = 0;
    long long end = byte * 8 + 8 < hi ? byte * 8 + 8 : hi;
    for (long long i = byte * 8; i < end; i++) {
      unsigned bit = x[i] >= 0.0f;
      packed |= bit << (i - byte * 8);
      x[i] -= bit ? s : -s;
    }
    code[byte] = (uint8_t)packed;
  }
}

/* one thread per element, the blocks (ranks) in order */
__global__ void decode(float *out, const uint8_t *code, const float *scale, long long n, long long chunk,
                       long long nblocks, float alpha) {
  long long nchunks = (n + chunk - 1) / chunk, nbytes = (n + 7) / 8;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    long long c = i / chunk;
    float acc = 0.0f;
    for (long long b = 0; b < nblocks; b++) {
      float sign = ((code[b * nbytes + (i >> 3)] >> (i & 7)) & 1u) ? 1.0f : -1.0f;
      acc += sign * scale[b * nchunks + c];
    }
    out[i] = acc * alpha;
  }
}

} /* namespace */

extern "C" mt_status mt__cuda_dist_onebit_encode(mt_tensor *v, const mt_tensor *g, mt_tensor *bits, mt_tensor *scales,
                                                 int64_t chunk) {
  const char *op = "dist.onebit.encode";
  long long n = mt__numel(v), nchunks = (n + chunk - 1) / chunk;
  if (nchunks > INT32_MAX) return mt__error(MT_ERR_SHAPE, "%s: %lld chunks is too many", op, nchunks);
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(v->device, &stream, op));
  encode<<<(unsigned)nchunks, THREADS, 0, stream>>>(mtk_ptr<float>(v), g ? mtk_ptr<const float>(g) : nullptr,
                                                    mtk_ptr<uint8_t>(bits), mtk_ptr<float>(scales), n, chunk);
  MT_CUDA_LAUNCH_CHECK(op);
  return MT_OK;
}

extern "C" mt_status mt__cuda_dist_onebit_decode(mt_tensor *dst, const mt_tensor *bits, const mt_tensor *scales,
                                                 int64_t chunk, int64_t nblocks, double alpha) {
  const char *op = "dist.onebit.decode";
  long long n = mt__numel(dst);
  long long blocks = (n + THREADS - 1) / THREADS;
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(dst->device, &stream, op));
  decode<<<(unsigned)(blocks < 65536 ? blocks : 65536), THREADS, 0, stream>>>(
      mtk_ptr<float>(dst), mtk_ptr<const uint8_t>(bits), mtk_ptr<const float>(scales), n, chunk, nblocks, (float)alpha);
  MT_CUDA_LAUNCH_CHECK(op);
  return MT_OK;
}
