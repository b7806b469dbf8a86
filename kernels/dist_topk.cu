/* dist_topk.cu: the CUDA body of residual gradient compression's selection (the slot
 * dist_topk; csrc/dist/topk.c checks the arguments and computes k): the k largest |v| of a
 * float32 vector as (int32 index, float value) pairs in ascending index order. It runs on the
 * device's stream and synchronizes it before returning, because it reads the pair count back.
 * Temporaries come from the caching allocator, whose frees are ordered on the same stream. */
#include "common.cuh"
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

namespace {

int grid_for(int64_t n, int threads, int cap) {
  int64_t b = (n + threads - 1) / threads;
  return (int)(b < 1 ? 1 : b > cap ? cap : b);
}

__device__ __forceinline__ uint32_t key_of(float x) { return __float_as_uint(x) & 0x7fffffffu; }

/* ---- top-k: radix selection of the k-th largest key, then an ordered compaction ----
 *
 * Keys are the float bits with the sign cleared (as on the CPU): their integer order is the
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

} /* namespace */

/* v: n float32 (1 <= k <= kmax <= n); idx, val: room for k pairs (kmax for threshold) */
extern "C" mt_status mt__cuda_dist_topk(const mt_tensor *v, int64_t k, int64_t kmax, int method, mt_tensor *idx,
                                        mt_tensor *val, int64_t *count) {
  const char *op = "dist.topk";
  int device = v->device;
  long long n = mt__numel(v);
  /* trimmed is exact on the device: trimming only narrows the candidates before an exact
   * selection, which here is already a fixed number of passes over v, and its result (the k
   * largest, ties to the lower index) is the same. threshold uses the k-th key itself as the
   * threshold: count(key >= K) is within [k, kmax] unless ties at K overflow kmax, where the
   * contract falls back to exact's k anyway; sampled has that contract and takes that body. */
  int threshold = method == MT_TOPK_THRESHOLD || method == MT_TOPK_SAMPLED;
  cudaStream_t stream;
  MT_TRY(mt__cuda_get_stream(device, &stream, op));

  long long ntiles = (n + TILE - 1) / TILE;
  /* scratch layout: state | 256 bins | tile counts (gt, eq) | tile offsets (off, eqb) */
  size_t o_hist = (sizeof(sel_state) + 15) & ~(size_t)15;
  size_t o_tgt = o_hist + 256 * sizeof(unsigned);
  size_t o_teq = o_tgt + (size_t)ntiles * sizeof(unsigned);
  size_t o_off = (o_teq + (size_t)ntiles * sizeof(unsigned) + 15) & ~(size_t)15;
  size_t o_eqb = o_off + (size_t)ntiles * sizeof(long long);
  size_t bytes = o_eqb + (size_t)ntiles * sizeof(long long);
  mtk_temp s;
  MT_TRY(s.alloc(device, bytes));
  char *p = s.as<char>();
  sel_state *st = (sel_state *)p;
  unsigned *hist = (unsigned *)(p + o_hist), *tgt = (unsigned *)(p + o_tgt), *teq = (unsigned *)(p + o_teq);
  long long *off = (long long *)(p + o_off), *eqb = (long long *)(p + o_eqb);
  const float *x = mtk_ptr<float>(v);

  sel_init<<<1, 256, 0, stream>>>(st, hist, k);
  MT_CUDA_LAUNCH_CHECK(op);
  int hgrid = grid_for(n, HIST_THREADS, 2048);
  for (int shift = 24; shift >= 0; shift -= 8) {
    sel_hist<<<hgrid, HIST_THREADS, 0, stream>>>(x, n, st, shift, hist);
    MT_CUDA_LAUNCH_CHECK(op);
    sel_pick<<<1, 256, 0, stream>>>(hist, st, shift);
    MT_CUDA_LAUNCH_CHECK(op);
  }
  pack_count<<<(unsigned)ntiles, TILE_THREADS, 0, stream>>>(x, n, st, tgt, teq);
  MT_CUDA_LAUNCH_CHECK(op);
  pack_offsets<<<1, SCAN_THREADS, 0, stream>>>(tgt, teq, ntiles, st, threshold, kmax, off, eqb);
  MT_CUDA_LAUNCH_CHECK(op);
  pack_write<<<(unsigned)ntiles, TILE_THREADS, 0, stream>>>(x, n, st, off, eqb, mtk_ptr<int32_t>(idx),
                                                            mtk_ptr<float>(val));
  MT_CUDA_LAUNCH_CHECK(op);

  sel_state h;
  MT_CUDA_TRY(cudaMemcpyAsync(&h, st, sizeof h, cudaMemcpyDeviceToHost, stream), op);
  MT_CUDA_TRY(cudaStreamSynchronize(stream), op);
  long long lo = k, hi = threshold ? kmax : k;
  if (h.passes != 4 || h.total < lo || h.total > hi)
    return mt__error(MT_ERR_INTERNAL, "%s: device selection went wrong (%d of 4 radix passes, %lld pairs for k = %lld)",
                     op, h.passes, h.total, (long long)k);
  *count = h.total;
  return MT_OK;
}
