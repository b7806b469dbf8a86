/* rgc_cuda.cu: the CUDA bodies of residual gradient compression's device steps (rgc_cuda.h):
 * top-k selection, masking the residual and the scatter-add of every rank's pairs. Arguments
 * arrive checked by topk.c / rgc.c; everything runs on the library's stream of the tensors'
 * device, and each function synchronizes that stream before returning because it reads a count
 * or an error flag back.
 *
 * Only the public accessors of moontorch.h are used (no core/tensor.h), so this file does not
 * depend on the layout of the C structs. Temporaries are CUDA tensors from mt_tensor_new: the
 * library's caching allocator, whose frees are ordered on the same stream as our kernels. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
extern "C" {
#include "../core/error.h"
#include "rgc_cuda.h"
}

/* ---- plumbing ---- */

#define CK(call, what)                                                                                        \
  do {                                                                                                        \
    cudaError_t ck_e = (call);                                                                                \
    if (ck_e != cudaSuccess) return mt__error(MT_ERR_CUDA, "%s: %s: %s", op, what, cudaGetErrorString(ck_e)); \
  } while (0)
/* a launch fails either at once (bad configuration) or asynchronously (seen at the sync) */
#define CK_LAUNCH(what) CK(cudaGetLastError(), "cannot launch " what)

namespace {

/* device scratch from the caching allocator, released when it goes out of scope (stream
 * ordered, so releasing before the kernels using it finish is safe) */
struct scratch {
  mt_tensor *t = nullptr;
  ~scratch() { mt_tensor_release(t); }
  mt_status alloc(int device, size_t nbytes) {
    int64_t n = (int64_t)(nbytes ? nbytes : 1);
    return mt_tensor_new(&t, MT_U8, device, 1, &n); /* the allocator words any failure */
  }
  char *bytes() const { return (char *)mt_tensor_data(t); }
};

mt_status enter(int device, cudaStream_t *stream, const char *op) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    return mt__error(MT_ERR_CUDA, "%s: cannot use CUDA device %d: %s", op, device, cudaGetErrorString(e));
  void *s = nullptr;
  MT_TRY(mt_cuda_stream(device, &s));
  *stream = (cudaStream_t)s;
  return MT_OK;
}

int grid_for(int64_t n, int threads, int cap) {
  int64_t b = (n + threads - 1) / threads;
  return (int)(b < 1 ? 1 : b > cap ? cap : b);
}

__device__ __forceinline__ uint32_t key_of(float x) { return __float_as_uint(x) & 0x7fffffffu; }

/* ---- top-k: radix selection of the k-th largest key, then an ordered compaction ----
 *
 * Keys are the float bits with the sign cleared (as in topk.c): their integer order is the
 * order of |v| and NaN sits above inf. The k-th largest key K is found 8 bits at a time from
 * the top (4 histogram passes; 256 bins fit in shared memory, where 16-bit digits would not),
 * each pass counting only the keys that match the digits already chosen. The walk over each
 * histogram runs in one small block on the device, so the passes queue without host round
 * trips. Then every element with key > K and the first take_eq with key == K (index order)
 * are packed in ascending index order: per-tile counts, a scan of them into offsets, and a
 * write pass whose block scans keep the order within a tile. */

constexpr int HIST_THREADS = 256;
constexpr int TILE_THREADS = 256;
constexpr int ITEMS = 16;
constexpr int TILE = TILE_THREADS * ITEMS;
constexpr int SCAN_THREADS = 512;

struct sel_state {
  uint32_t prefix;   /* digits of K chosen so far */
  uint32_t mask;     /* which bits of prefix are chosen */
  long long need;    /* rank of K among the keys matching prefix (1-based) */
  long long above;   /* keys greater than every key matching prefix */
  long long n_eq;    /* after the last pass: how many keys equal K */
  long long take_eq; /* how many of the keys equal to K are packed */
  long long total;   /* pairs packed */
  int passes;        /* passes that found their digit: 4 unless elements were lost */
};

__global__ void sel_init(sel_state *st, unsigned *hist, long long k) {
  int t = threadIdx.x;
  if (t == 0) {
    st->prefix = 0;
    st->mask = 0;
    st->need = k;
    st->above = 0;
    st->n_eq = 0;
    st->take_eq = 0;
    st->total = 0;
    st->passes = 0;
  }
  for (int b = t; b < 256; b += blockDim.x) hist[b] = 0;
}

__global__ void sel_hist(const float *__restrict__ v, long long n, const sel_state *st, int shift, unsigned *hist) {
  __shared__ unsigned h[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
  __syncthreads();
  uint32_t prefix = st->prefix, mask = st->mask;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint32_t key = key_of(v[i]);
    if ((key & mask) == prefix) atomicAdd(&h[(key >> shift) & 255u], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (h[b]) atomicAdd(&hist[b], h[b]);
}

/* one block of 256 threads: thread t owns bin 255 - t, so an inclusive scan over threads sums
 * the bins from the top; the digit is the bin where that sum first reaches `need` */
__global__ void sel_pick(unsigned *hist, sel_state *st, int shift) {
  typedef cub::BlockScan<long long, 256> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  int t = threadIdx.x;
  uint32_t b = 255u - (uint32_t)t;
  long long c = hist[b];
  long long need = st->need;
  long long incl;
  scan_t(tmp).InclusiveSum(c, incl);
  __syncthreads(); /* every thread has read st before the chosen one writes it */
  long long excl = incl - c;
  if (excl < need && incl >= need) {
    st->prefix |= b << shift;
    st->mask |= 255u << shift;
    st->need = need - excl;
    st->above += excl;
    st->n_eq = c; /* after the last pass: exactly the keys equal to K */
    st->passes += 1;
  }
  hist[b] = 0; /* cleared for the next pass */
}

/* per tile: keys > K and keys == K (order does not matter here: coalesced layout) */
__global__ void pack_count(const float *__restrict__ v, long long n, const sel_state *st, unsigned *tgt,
                           unsigned *teq) {
  typedef cub::BlockReduce<unsigned, TILE_THREADS> red_t;
  __shared__ typename red_t::TempStorage tmp;
  uint32_t K = st->prefix;
  long long base = (long long)blockIdx.x * TILE;
  unsigned g = 0, e = 0;
  for (int j = 0; j < ITEMS; j++) {
    long long i = base + (long long)j * TILE_THREADS + threadIdx.x;
    if (i < n) {
      uint32_t key = key_of(v[i]);
      g += key > K;
      e += key == K;
    }
  }
  unsigned sg = red_t(tmp).Sum(g);
  __syncthreads();
  unsigned se = red_t(tmp).Sum(e);
  if (threadIdx.x == 0) {
    tgt[blockIdx.x] = sg;
    teq[blockIdx.x] = se;
  }
}

/* one block: how many ties to take (threshold: all of them when that stays within kmax),
 * then, tile by tile in order, the ties seen before each tile and each tile's output offset */
/* launch bounds: unbounded, the compiler gave this kernel 95 registers, and 1024 threads of
 * that did not fit a multiprocessor's 64K (the launch failed on an H100); 512 threads fit
 * without spills */
__global__ void __launch_bounds__(SCAN_THREADS)
    pack_offsets(const unsigned *tgt, const unsigned *teq, long long ntiles, sel_state *st, int threshold,
                 long long kmax, long long *off, long long *eqb) {
  typedef cub::BlockScan<long long, SCAN_THREADS> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  __shared__ long long take_sh;
  if (threadIdx.x == 0) {
    long long take = st->need; /* k - count(key > K) */
    if (threshold && st->above + st->n_eq <= kmax) take = st->n_eq;
    st->take_eq = take;
    take_sh = take;
  }
  __syncthreads();
  long long take = take_sh, carry_eq = 0, carry_off = 0;
  for (long long first = 0; first < ntiles; first += SCAN_THREADS) {
    long long b = first + threadIdx.x;
    long long e = b < ntiles ? teq[b] : 0, g = b < ntiles ? tgt[b] : 0;
    long long eb, agg;
    scan_t(tmp).ExclusiveSum(e, eb, agg);
    eb += carry_eq;
    carry_eq += agg;
    long long te = take - eb;
    te = te < 0 ? 0 : te > e ? e : te;
    __syncthreads();
    long long o;
    scan_t(tmp).ExclusiveSum(g + te, o, agg);
    o += carry_off;
    carry_off += agg;
    if (b < ntiles) {
      off[b] = o;
      eqb[b] = eb;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) st->total = carry_off;
}

/* each thread owns ITEMS consecutive elements, so block scans of per-thread counts give the
 * index order within the tile: first the ties seen before each thread, then write offsets */
__global__ void pack_write(const float *__restrict__ v, long long n, const sel_state *st, const long long *off,
                           const long long *eqb, int32_t *__restrict__ oi, float *__restrict__ ov) {
  typedef cub::BlockScan<int, TILE_THREADS> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  uint32_t K = st->prefix;
  long long take = st->take_eq;
  long long base = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
  float x[ITEMS];
  int e = 0;
  for (int j = 0; j < ITEMS; j++) {
    long long i = base + j;
    x[j] = i < n ? v[i] : 0.0f;
    e += i < n && key_of(x[j]) == K;
  }
  int ebefore;
  scan_t(tmp).ExclusiveSum(e, ebefore);
  long long seen = eqb[blockIdx.x] + ebefore;
  unsigned flags = 0;
  int c = 0;
  for (int j = 0; j < ITEMS; j++) {
    if (base + j >= n) break;
    uint32_t key = key_of(x[j]);
    bool takeit = key > K;
    if (key == K) takeit = seen++ < take;
    if (takeit) {
      flags |= 1u << j;
      c++;
    }
  }
  __syncthreads();
  int cbefore;
  scan_t(tmp).ExclusiveSum(c, cbefore);
  long long o = off[blockIdx.x] + cbefore;
  for (int j = 0; j < ITEMS; j++)
    if (flags & (1u << j)) {
      oi[o] = (int32_t)(base + j);
      ov[o] = x[j];
      o++;
    }
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

__device__ __forceinline__ float wire_load(const float *p) { return *p; }
__device__ __forceinline__ float wire_load(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ float wire_load(const __nv_bfloat16 *p) { return __bfloat162float(*p); }

/* one body for every wire dtype; the product in double, then rounded, as rgc.c does. Indices
 * repeat across blocks (ranks), hence atomics. */
template <class W> __global__ void scatter_apply(float *out, const int32_t *ix, const W *val, long long total,
                                                 double scale, const unsigned long long *bad) {
  if (*bad != ~0ull) return;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    int32_t j = ix[i];
    if (j >= 0) atomicAdd(out + j, (float)(scale * (double)wire_load(val + i)));
  }
}

/* the first bad position (or -1) and the index stored there, after the stream finished */
mt_status read_bad(cudaStream_t stream, const unsigned long long *bad_d, const int32_t *ix, long long *pos,
                   int32_t *value, const char *op) {
  unsigned long long bad = 0;
  CK(cudaMemcpyAsync(&bad, bad_d, sizeof bad, cudaMemcpyDeviceToHost, stream), "cannot read the index check back");
  CK(cudaStreamSynchronize(stream), "kernel failed");
  *pos = -1;
  if (bad == ~0ull) return MT_OK;
  *pos = (long long)bad;
  CK(cudaMemcpyAsync(value, ix + bad, sizeof *value, cudaMemcpyDeviceToHost, stream), "cannot read the bad index back");
  CK(cudaStreamSynchronize(stream), "cannot read the bad index back");
  return MT_OK;
}

} /* namespace */

extern "C" mt_status mt__dist_topk_cuda(const mt_tensor *v, double density, int method, double slack, mt_tensor *idx,
                                        mt_tensor *val, int64_t *count) {
  const char *op = "dist.topk";
  *count = 0;
  int device = mt_tensor_device(v);
  long long n = mt_tensor_numel(v);
  if (n == 0) return MT_OK;
  /* k and kmax as topk.c computes them */
  long long k = (long long)ceil(density * (double)n);
  if (k < 1) k = 1;
  if (k > n) k = n;
  long long kmax = (long long)floor((double)k * (1.0 + slack));
  if (kmax > n) kmax = n;
  /* trimmed is exact on the device: trimming only narrows the candidates before an exact
   * selection, which here is already a fixed number of passes over v, and its result (the k
   * largest, ties to the lower index) is the same. threshold uses the k-th key itself as the
   * threshold: count(key >= K) is within [k, kmax] unless ties at K overflow kmax, where the
   * contract falls back to exact's k anyway. */
  int threshold = method == MT_TOPK_THRESHOLD;
  cudaStream_t stream;
  MT_TRY(enter(device, &stream, op));

  long long ntiles = (n + TILE - 1) / TILE;
  /* scratch layout: state | 256 bins | tile counts (gt, eq) | tile offsets (off, eqb) */
  size_t o_hist = (sizeof(sel_state) + 15) & ~(size_t)15;
  size_t o_tgt = o_hist + 256 * sizeof(unsigned);
  size_t o_teq = o_tgt + (size_t)ntiles * sizeof(unsigned);
  size_t o_off = (o_teq + (size_t)ntiles * sizeof(unsigned) + 15) & ~(size_t)15;
  size_t o_eqb = o_off + (size_t)ntiles * sizeof(long long);
  size_t bytes = o_eqb + (size_t)ntiles * sizeof(long long);
  scratch s;
  MT_TRY(s.alloc(device, bytes));
  char *p = s.bytes();
  sel_state *st = (sel_state *)p;
  unsigned *hist = (unsigned *)(p + o_hist), *tgt = (unsigned *)(p + o_tgt), *teq = (unsigned *)(p + o_teq);
  long long *off = (long long *)(p + o_off), *eqb = (long long *)(p + o_eqb);
  const float *x = (const float *)mt_tensor_data(v);

  sel_init<<<1, 256, 0, stream>>>(st, hist, k);
  CK_LAUNCH("the selection setup");
  int hgrid = grid_for(n, HIST_THREADS, 2048);
  for (int shift = 24; shift >= 0; shift -= 8) {
    sel_hist<<<hgrid, HIST_THREADS, 0, stream>>>(x, n, st, shift, hist);
    CK_LAUNCH("the radix histogram");
    sel_pick<<<1, 256, 0, stream>>>(hist, st, shift);
    CK_LAUNCH("the radix digit choice");
  }
  pack_count<<<(unsigned)ntiles, TILE_THREADS, 0, stream>>>(x, n, st, tgt, teq);
  CK_LAUNCH("the packing count");
  pack_offsets<<<1, SCAN_THREADS, 0, stream>>>(tgt, teq, ntiles, st, threshold, kmax, off, eqb);
  CK_LAUNCH("the packing offsets");
  pack_write<<<(unsigned)ntiles, TILE_THREADS, 0, stream>>>(x, n, st, off, eqb, (int32_t *)mt_tensor_data(idx),
                                                            (float *)mt_tensor_data(val));
  CK_LAUNCH("the packing");

  sel_state h;
  CK(cudaMemcpyAsync(&h, st, sizeof h, cudaMemcpyDeviceToHost, stream), "cannot read the count back");
  CK(cudaStreamSynchronize(stream), "selection kernels failed");
  long long lo = k, hi = threshold ? kmax : k;
  if (h.passes != 4 || h.total < lo || h.total > hi)
    return mt__error(MT_ERR_INTERNAL, "%s: device selection went wrong (%d of 4 radix passes, %lld pairs for k = %lld)",
                     op, h.passes, h.total, k);
  *count = h.total;
  return MT_OK;
}

extern "C" mt_status mt__dist_rgc_mask_cuda(mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base) {
  const char *op = "dist.rgc.mask";
  int device = mt_tensor_device(v);
  long long n = mt_tensor_numel(v);
  cudaStream_t stream;
  MT_TRY(enter(device, &stream, op));
  scratch s;
  MT_TRY(s.alloc(device, sizeof(unsigned long long)));
  unsigned long long *bad = (unsigned long long *)s.bytes();
  int32_t *ix = (int32_t *)mt_tensor_data(idx);
  CK(cudaMemsetAsync(bad, 0xff, sizeof *bad, stream), "cannot clear the index check");
  int grid = grid_for(count, EW_THREADS, 4096);
  find_bad<<<grid, EW_THREADS, 0, stream>>>(ix, count, n, 0, bad);
  CK_LAUNCH("the index check");
  mask_apply<<<grid, EW_THREADS, 0, stream>>>((float *)mt_tensor_data(v), u ? (float *)mt_tensor_data(u) : nullptr, ix,
                                              count, (int32_t)base, bad);
  CK_LAUNCH("the mask");
  long long pos;
  int32_t value = 0;
  MT_TRY(read_bad(stream, bad, ix, &pos, &value, op));
  if (pos >= 0)
    return mt__error(MT_ERR_INDEX, "%s: idx[%lld] = %d is outside v's %lld elements", op, pos, (int)value, n);
  return MT_OK;
}

extern "C" mt_status mt__dist_rgc_scatter_add_cuda(mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val,
                                                   int64_t block, double scale) {
  const char *op = "dist.rgc.scatterAdd";
  int device = mt_tensor_device(dst);
  long long n = mt_tensor_numel(dst), total = mt_tensor_numel(idx);
  cudaStream_t stream;
  MT_TRY(enter(device, &stream, op));
  scratch s;
  MT_TRY(s.alloc(device, sizeof(unsigned long long)));
  unsigned long long *bad = (unsigned long long *)s.bytes();
  const int32_t *ix = (const int32_t *)mt_tensor_data(idx);
  float *out = (float *)mt_tensor_data(dst);
  const void *vv = mt_tensor_data(val);
  CK(cudaMemsetAsync(bad, 0xff, sizeof *bad, stream), "cannot clear the index check");
  int grid = grid_for(total, EW_THREADS, 4096);
  find_bad<<<grid, EW_THREADS, 0, stream>>>(ix, total, n, 1, bad);
  CK_LAUNCH("the index check");
  switch (mt_tensor_dtype(val)) {
    case MT_F32:
      scatter_apply<float><<<grid, EW_THREADS, 0, stream>>>(out, ix, (const float *)vv, total, scale, bad);
      break;
    case MT_F16:
      scatter_apply<__half><<<grid, EW_THREADS, 0, stream>>>(out, ix, (const __half *)vv, total, scale, bad);
      break;
    default: /* MT_BF16: rgc.c accepts no other */
      scatter_apply<__nv_bfloat16>
          <<<grid, EW_THREADS, 0, stream>>>(out, ix, (const __nv_bfloat16 *)vv, total, scale, bad);
      break;
  }
  CK_LAUNCH("the scatter-add");
  long long pos;
  int32_t value = 0;
  MT_TRY(read_bad(stream, bad, ix, &pos, &value, op));
  if (pos >= 0)
    return mt__error(MT_ERR_INDEX, "%s: index %d (pair %lld of block %lld) is outside dst's %lld elements", op,
                     (int)value, pos % block, pos / block, n);
  return MT_OK;
}
