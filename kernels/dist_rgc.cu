/* dist_rgc.cu: the CUDA bodies of the element-wise steps of residual gradient compression around
 * the selection (the slots dist_rgc_accumulate, dist_rgc_mask and dist_rgc_scatter_add;
 * csrc/dist/rgc.c checks the arguments): the gradient into the residual, masking what was sent
 * out of it, and the scatter-add of every rank's pairs. The accumulation is queued on the
 * device's stream; the other two synchronize it before returning, because they read an error
 * flag back. Temporaries come from the caching allocator. */
#include "common.cuh"

namespace {

int grid_for(int64_t n, int threads, int cap) {
  int64_t b = (n + threads - 1) / threads;
  return (int)(b < 1 ? 1 : b > cap ? cap : b);
}

/* ---- mask and scatter-add ----
 * An index is validated by a check kernel that records the first bad position; the kernel
 * that modifies the tensors then does nothing when one was found, so a bad index leaves every
 * tensor as it was (as on the CPU) without a host round trip between the two. */

constexpr int EW_THREADS = 256;

__global__ void find_bad(const int32_t *ix, long long count, long long n, int allow_negative, unsigned long long *bad) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    int32_t j = ix[i];
    if (j >= n || (j < 0 && !allow_negative)) atomicMin(bad, (unsigned long long)i);
  }
}

__global__ void mask_apply(float *x, float *m, int32_t *ix, long long count, int32_t base,
                           const unsigned long long *bad) {
  if (*bad != ~0ull) return;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    int32_t j = ix[i];
    x[j] = 0.0f;
    if (m) m[j] = 0.0f;
    ix[i] = j + base;
  }
}

/* one body for every wire dtype (mtk_ld: float, or a half or bfloat16 widened to float); the
 * product in double, then rounded, as the CPU body does. Indices repeat across blocks (ranks),
 * hence atomics. */
template <class W> __global__ void scatter_apply(float *out, const int32_t *ix, const W *val, long long total,
                                                 double scale, const unsigned long long *bad) {
  if (*bad != ~0ull) return;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    int32_t j = ix[i];
    if (j >= 0) atomicAdd(out + j, (float)(scale * (double)mtk_ld(val + i)));
  }
}

/* the CPU body's arithmetic (csrc/cpu/dist_rgc.c), one thread per element */
__global__ void accumulate(float *x, float *vel, const float *grad, const float *par, long long n, float m,
                           int nesterov, float wd) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float d = par ? grad[i] + wd * par[i] : grad[i];
    if (vel) {
      float w = m * vel[i] + d;
      vel[i] = w;
      x[i] += nesterov ? d + m * w : w;
    } else {
      x[i] += d;
    }
  }
}

/* the first bad position (or -1) and the index stored there, after the stream finished */
mt_status read_bad(cudaStream_t stream, const unsigned long long *bad_d, const int32_t *ix, long long *pos,
                   int32_t *value, const char *op) {
  unsigned long long bad = 0;
  MT_CUDA_TRY(cudaMemcpyAsync(&bad, bad_d, sizeof bad, cudaMemcpyDeviceToHost, stream), op);
  MT_CUDA_TRY(cudaStreamSynchronize(stream), op);
  *pos = -1;
  if (bad == ~0ull) return MT_OK;
  *pos = (long long)bad;
  MT_CUDA_TRY(cudaMemcpyAsync(value, ix + bad, sizeof *value, cudaMemcpyDeviceToHost, stream), op);
  MT_CUDA_TRY(cudaStreamSynchronize(stream), op);
  return MT_OK;
}

} /* namespace */

/* v, g (and u, p where given): float32 of one numel */
extern "C" mt_status mt__cuda_dist_rgc_accumulate(mt_tensor *v, mt_tensor *u, const mt_tensor *g, const mt_tensor *p,
                                                  double momentum, int nesterov, double weight_decay) {
  const char *op = "dist.rgc.accumulate";
  long long n = mt__numel(v);
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(v->device, &stream, op));
  accumulate<<<grid_for(n, EW_THREADS, 65536), EW_THREADS, 0, stream>>>(
      mtk_ptr<float>(v), u ? mtk_ptr<float>(u) : nullptr, mtk_ptr<const float>(g),
      p ? mtk_ptr<const float>(p) : nullptr, n, (float)momentum, nesterov, (float)weight_decay);
  MT_CUDA_LAUNCH_CHECK(op);
  return MT_OK;
}

/* v, u (may be NULL): float32; idx: count >= 1 int32 indices into v, shifted by base once applied */
extern "C" mt_status mt__cuda_dist_rgc_mask(mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base) {
  const char *op = "dist.rgc.mask";
  int device = v->device;
  long long n = mt__numel(v);
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(device, &stream, op));
  mtk_temp s;
  MT_TRY(s.alloc(device, sizeof(unsigned long long)));
  unsigned long long *bad = s.as<unsigned long long>();
  int32_t *ix = mtk_ptr<int32_t>(idx);
  MT_CUDA_TRY(cudaMemsetAsync(bad, 0xff, sizeof *bad, stream), op);
  int grid = grid_for(count, EW_THREADS, 4096);
  find_bad<<<grid, EW_THREADS, 0, stream>>>(ix, count, n, 0, bad);
  MT_CUDA_LAUNCH_CHECK(op);
  mask_apply<<<grid, EW_THREADS, 0, stream>>>(mtk_ptr<float>(v), u ? mtk_ptr<float>(u) : nullptr, ix, count,
                                              (int32_t)base, bad);
  MT_CUDA_LAUNCH_CHECK(op);
  long long pos;
  int32_t value = 0;
  MT_TRY(read_bad(stream, bad, ix, &pos, &value, op));
  if (pos >= 0)
    return mt__error(MT_ERR_INDEX, "%s: idx[%lld] = %d is outside v's %lld elements", op, pos, (int)value, n);
  return MT_OK;
}

/* dst: float32; idx (int32), val (float32, float16 or bfloat16): nblocks x block pairs, block >= 1 */
extern "C" mt_status mt__cuda_dist_rgc_scatter_add(mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val,
                                                   int64_t block, double scale) {
  const char *op = "dist.rgc.scatterAdd";
  int device = dst->device;
  long long n = mt__numel(dst), total = mt__numel(idx);
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(device, &stream, op));
  mtk_temp s;
  MT_TRY(s.alloc(device, sizeof(unsigned long long)));
  unsigned long long *bad = s.as<unsigned long long>();
  const int32_t *ix = mtk_ptr<int32_t>(idx);
  float *out = mtk_ptr<float>(dst);
  const void *vv = mt__data(val);
  MT_CUDA_TRY(cudaMemsetAsync(bad, 0xff, sizeof *bad, stream), op);
  int grid = grid_for(total, EW_THREADS, 4096);
  find_bad<<<grid, EW_THREADS, 0, stream>>>(ix, total, n, 1, bad);
  MT_CUDA_LAUNCH_CHECK(op);
  switch (val->dtype) {
    case MT_F32:
      scatter_apply<float><<<grid, EW_THREADS, 0, stream>>>(out, ix, (const float *)vv, total, scale, bad);
      break;
    case MT_F16:
      scatter_apply<__half><<<grid, EW_THREADS, 0, stream>>>(out, ix, (const __half *)vv, total, scale, bad);
      break;
    default: /* MT_BF16: csrc/dist/rgc.c accepts no other */
      scatter_apply<__nv_bfloat16>
          <<<grid, EW_THREADS, 0, stream>>>(out, ix, (const __nv_bfloat16 *)vv, total, scale, bad);
      break;
  }
  MT_CUDA_LAUNCH_CHECK(op);
  long long pos;
  int32_t value = 0;
  MT_TRY(read_bad(stream, bad, ix, &pos, &value, op));
  if (pos >= 0)
    return mt__error(MT_ERR_INDEX, "%s: index %d (pair %lld of block %lld) is outside dst's %lld elements", op,
                     (int)value, pos % block, pos / block, n);
  return MT_OK;
}
