/* dist_topk.c: the CPU body of residual gradient compression's selection step (the slot
 * dist_topk; csrc/dist/topk.c checks the arguments and computes k): pick the elements of
 * largest magnitude of a float32 vector and pack them as (int32 index, float value) pairs, in
 * ascending index order (RedSync, Fang et al. 2019; Deep Gradient Compression, Lin et al. 2018).
 *
 * Magnitudes are compared as keys: the float's bits with the sign cleared. For IEEE floats that
 * integer order is the order of |v| (-0 == +0), and NaN keys sit above +inf, so a NaN counts as
 * the largest magnitude: it is always sent, never hidden in the residual. Integer keys also make
 * every count exact, so results do not depend on the thread count.
 *
 *   exact     the k largest keys, ties broken by lower index. The k-th key is found by radix
 *             selection (two histogram passes of 16 bits): O(n), no copy of v and parallel,
 *             where quickselect would need an n-element scratch copy and a serial partition.
 *   threshold RedSync's threshold search: a key t with count(key >= t) in [k, kmax], kmax =
 *             floor(k*(1+slack)), guessed from a sample of v and refined on the whole of it
 *             (secant steps in the sample's ranks, then bisection of the key range). When ties
 *             at the k-th key make every such t impossible, it falls back to exact's k.
 *   trimmed   RedSync's trimmed top-k: t = mean + r*(max-mean) of |v|, r lowered until at least
 *             k elements qualify; those candidates are gathered and exact runs on them.
 *   sampled   Deep Gradient Compression's: a threshold from a sample of v, then one pass that
 *             counts and gathers every |v| >= it; a count below k (or too many to hold) moves
 *             the sample rank once and repeats the pass, a count above kmax keeps exact's k of
 *             the gathered; only a second miss falls back to exact on the whole of v. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "cpu.h"
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

/* below this many elements a parallel region costs more than the scan */
#define PAR_MIN 32768

static int thread_num(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}
static int num_threads(void) {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

static inline uint32_t key_of(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b & 0x7fffffffu;
}

/* count(key >= t) */
static int64_t count_ge(const float *v, int64_t n, uint64_t t) {
  int64_t c = 0;
#pragma omp parallel for reduction(+ : c) schedule(static) if (n >= PAR_MIN)
  for (int64_t i = 0; i < n; i++) c += key_of(v[i]) >= t;
  return c;
}

/* The k-th largest key (1 <= k <= n) and *n_gt = count(key > it), by radix selection on the
 * high then the low 16 bits (keys are at most 0x7fffffff: the high digit uses 32768 bins).
 * Per-thread histograms are uint32_t: n fits int32 (checked by the caller). */
#define HBINS 65536
static mt_status kth_key(const float *v, int64_t n, int64_t k, uint32_t *kth, int64_t *n_gt) {
  int nt = mt_get_num_threads();
  uint32_t *hist = calloc((size_t)nt * HBINS, sizeof *hist);
  if (!hist) return mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate %d histograms", nt);
  uint32_t prefix = 0;
  int64_t above = 0; /* keys greater than the digits chosen so far */
  for (int pass = 0; pass < 2; pass++) {
    int used = 1;
#pragma omp parallel if (n >= PAR_MIN)
    {
      int T = num_threads(), t = thread_num();
      uint32_t *h = hist + (size_t)t * HBINS;
      int64_t lo = n * t / T, hi = n * (t + 1) / T;
      if (pass == 0) {
        for (int64_t i = lo; i < hi; i++) h[key_of(v[i]) >> 16]++;
      } else {
        for (int64_t i = lo; i < hi; i++) {
          uint32_t key = key_of(v[i]);
          if ((key >> 16) == prefix) h[key & 0xffffu]++;
        }
      }
      if (t == 0) used = T;
    }
    /* walk the bins from the top until k keys are covered; merging clears them for pass 1 */
    int64_t need = k - above;
    int bin = HBINS - 1;
    for (; bin >= 0; bin--) {
      int64_t c = 0;
      for (int t = 0; t < used; t++) {
        c += hist[(size_t)t * HBINS + bin];
        hist[(size_t)t * HBINS + bin] = 0;
      }
      if (c >= need) break;
      need -= c;
      above += c;
    }
    for (int b = bin - 1; b >= 0; b--) /* clear the rest for the next pass */
      for (int t = 0; t < used; t++) hist[(size_t)t * HBINS + b] = 0;
    if (bin < 0) { /* fewer than k keys: a caller passed k > n */
      free(hist);
      return mt__error(MT_ERR_INTERNAL, "dist.topk: radix selection lost elements");
    }
    prefix = pass == 0 ? (uint32_t)bin : (prefix << 16) | (uint32_t)bin;
  }
  free(hist);
  *kth = prefix;
  *n_gt = above;
  return MT_OK;
}

/* Packing, in ascending index order, of every element with key > K plus the first `take_eq`
 * (by index) with key == K; index i is written as map ? map[i] : i. v is cut into a fixed
 * number of chunks: pack_count counts each chunk and turns the counts into offsets,
 * pack_write writes each chunk from its offset, so the output is the same whatever the thread
 * count. `part` holds 4 * mt_get_num_threads() int64_t. */
typedef struct {
  int64_t *gt, *eq, *off, *eqb;
  int nc;
} chunks;

static int64_t pack_count(const float *v, int64_t n, uint32_t K, int64_t take_eq, int64_t *part, chunks *ch) {
  int nt = mt_get_num_threads();
  ch->gt = part, ch->eq = part + nt, ch->off = part + 2 * nt, ch->eqb = part + 3 * nt;
  ch->nc = n >= PAR_MIN ? nt : 1;
  int nc = ch->nc;
  int64_t *gt = ch->gt, *eq = ch->eq;
#pragma omp parallel for schedule(static, 1) if (nc > 1)
  for (int c = 0; c < nc; c++) {
    int64_t lo = n * c / nc, hi = n * (c + 1) / nc, g = 0, e = 0;
    for (int64_t i = lo; i < hi; i++) {
      uint32_t key = key_of(v[i]);
      g += key > K;
      e += key == K;
    }
    gt[c] = g;
    eq[c] = e;
  }
  int64_t o = 0, eb = 0;
  for (int c = 0; c < nc; c++) {
    int64_t te = take_eq - eb; /* ties this chunk may still take */
    te = te < 0 ? 0 : te > eq[c] ? eq[c] : te;
    ch->off[c] = o;
    ch->eqb[c] = eb;
    o += gt[c] + te;
    eb += eq[c];
  }
  return o;
}

static void pack_write(const float *v, const int32_t *map, int64_t n, uint32_t K, int64_t take_eq, const chunks *ch,
                       int32_t *oi, float *ov) {
  int nc = ch->nc;
#pragma omp parallel for schedule(static, 1) if (nc > 1)
  for (int c = 0; c < nc; c++) {
    int64_t lo = n * c / nc, hi = n * (c + 1) / nc, o = ch->off[c], seen = ch->eqb[c];
    for (int64_t i = lo; i < hi; i++) {
      uint32_t key = key_of(v[i]);
      int take = key > K;
      if (key == K) take = seen++ < take_eq;
      if (take) {
        oi[o] = map ? map[i] : (int32_t)i;
        ov[o] = v[i];
        o++;
      }
    }
  }
}

static int64_t pack(const float *v, const int32_t *map, int64_t n, uint32_t K, int64_t take_eq, int64_t *part,
                    int32_t *oi, float *ov) {
  chunks ch;
  int64_t total = pack_count(v, n, K, take_eq, part, &ch);
  pack_write(v, map, n, K, take_eq, &ch, oi, ov);
  return total;
}

/* every element with key >= t: key > t-1 with no ties taken, or all of v when t == 0 */
static int64_t pack_ge(const float *v, int64_t n, uint32_t t, int64_t *part, int32_t *oi, float *ov) {
  return t == 0 ? pack(v, NULL, n, 0, INT64_MAX, part, oi, ov) : pack(v, NULL, n, t - 1, 0, part, oi, ov);
}

/* A sample of about s values of v in blocks of 64 consecutive elements at pseudo-random
 * offsets (fixed seed: the same v gives the same result; blocks: streamed, not gathered). */
#define SBLOCK 64
static float *sample(const float *v, int64_t n, int64_t *s) {
  int64_t nb = (*s + SBLOCK - 1) / SBLOCK;
  float *smp = malloc((size_t)(nb * SBLOCK) * sizeof *smp);
  if (!smp) return NULL;
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int64_t b = 0; b < nb; b++) { /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy(smp + b * SBLOCK, v + x % (uint64_t)(n - SBLOCK + 1), SBLOCK * sizeof *smp);
  }
  *s = nb * SBLOCK;
  return smp;
}

/* the sample holds about this many of the k largest, enough for its ranks to mean something */
#define SHITS 256.0

static mt_status select_exact(const float *v, const int32_t *map, int64_t n, int64_t k, int64_t *part, int32_t *oi,
                              float *ov, int64_t *count);

/* Exact on a large v with a small k: a sample gives a key g that about 1.5k elements reach;
 * those candidates (a superset of the top k, in index order) are gathered in one counting and
 * one writing pass and exact runs on them: two passes over v instead of the radix's four.
 * *done = 0 when the guess falls short (then nothing was written). */
static mt_status exact_sampled(const float *v, int64_t n, int64_t k, int64_t *part, int32_t *oi, float *ov,
                               int64_t *count, int *done) {
  *done = 0;
  int64_t s = (int64_t)(SHITS * (double)n / (double)k);
  float *smp = sample(v, n, &s);
  if (!smp) return mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate a sample of %lld", (long long)s);
  uint32_t g;
  int64_t ngt;
  int64_t rank = (int64_t)(1.5 * SHITS);
  mt_status st = kth_key(smp, s, rank < s ? rank : s, &g, &ngt);
  free(smp);
  if (st != MT_OK || g == 0) return st;
  chunks ch;
  int64_t c = pack_count(v, n, g - 1, 0, part, &ch);
  if (c < k) return MT_OK;
  int32_t *ci = malloc((size_t)c * sizeof *ci);
  float *cv = malloc((size_t)c * sizeof *cv);
  if (!ci || !cv) {
    st = mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate %lld candidates", (long long)c);
  } else {
    pack_write(v, NULL, n, g - 1, 0, &ch, ci, cv);
    st = select_exact(cv, ci, c, k, part, oi, ov, count);
    *done = st == MT_OK;
  }
  free(ci);
  free(cv);
  return st;
}

/* exactly the k largest (ties: lower index first) of v[0..n), 1 <= k <= n */
static mt_status select_exact(const float *v, const int32_t *map, int64_t n, int64_t k, int64_t *part, int32_t *oi,
                              float *ov, int64_t *count) {
  if (!map && n >= PAR_MIN && SHITS * (double)n / (double)k <= (double)n / 8) {
    int done;
    MT_TRY(exact_sampled(v, n, k, part, oi, ov, count, &done));
    if (done) return MT_OK;
  }
  uint32_t K;
  int64_t n_gt;
  MT_TRY(kth_key(v, n, k, &K, &n_gt));
  *count = pack(v, map, n, K, k - n_gt, part, oi, ov);
  return MT_OK;
}

/* A threshold key t with count(key >= t) in [k, kmax]: from a sample guess the key at the
 * matching rank, count on the whole of v, correct the rank by the ratio missed (a few secant
 * steps), then bisect the bracket of keys. *found = 0 when ties make the range unreachable. */
static mt_status find_threshold(const float *v, int64_t n, int64_t k, int64_t kmax, uint32_t *thr, int *found) {
  uint64_t lo = 0, hi = 0x80000000u; /* count(>= lo) >= k; count(>= hi) = 0 < k */
  int64_t want = (k + kmax) / 2;
  int64_t s = (int64_t)(SHITS * (double)n / (double)k);
  if (n >= PAR_MIN && s <= n / 8) {
    float *smp = sample(v, n, &s);
    if (!smp) return mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate a sample of %lld", (long long)s);
    double r = (double)want * (double)s / (double)n;
    for (int step = 0; step < 4; step++) {
      int64_t rk = r < 1 ? 1 : r > (double)s ? s : (int64_t)r;
      uint32_t g;
      int64_t ngt;
      mt_status st = kth_key(smp, s, rk, &g, &ngt);
      if (st != MT_OK) {
        free(smp);
        return st;
      }
      if (g <= lo || g >= hi) break;
      int64_t c = count_ge(v, n, g);
      if (c >= k && c <= kmax) {
        free(smp);
        *thr = g;
        *found = 1;
        return MT_OK;
      }
      if (c >= k) lo = g;
      else hi = g;
      r = r * (double)want / (double)(c > 0 ? c : 1);
    }
    free(smp);
  }
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    int64_t c = count_ge(v, n, mid);
    if (c >= k && c <= kmax) {
      *thr = (uint32_t)mid;
      *found = 1;
      return MT_OK;
    }
    if (c >= k) lo = mid;
    else hi = mid;
  }
  /* lo is now the k-th key; count(>= lo) > kmax only because of ties at lo, unless lo = 0
   * still qualifies (with slack the whole of v may fit) */
  int64_t c = count_ge(v, n, lo);
  *thr = (uint32_t)lo;
  *found = c >= k && c <= kmax;
  return MT_OK;
}

/* RedSync's trimmed top-k: candidates are the |v| >= mean + r*(max-mean) (mean and max of the
 * finite |v|; non-finite ones are always candidates), r lowered until at least k qualify, then
 * exact on the candidates. Lowering r one step at a time costs a pass over v per step, so one
 * pass histograms (|v|-mean)/(max-mean) into RBINS bins and the walk from the top picks the
 * first r = b/RBINS that reaches k (then checked by the gathering pass's own count). */
#define RBINS 1024
/* x clamped to [0, RBINS] (NaN: 0) without a branch: compilers turn the portable form into
 * compare-and-jump, which mispredicts on half of v; fminf/fmaxf become libm calls */
static inline float clamp_bins(float x) {
#if defined(__SSE__)
  return _mm_cvtss_f32(_mm_min_ss(_mm_max_ss(_mm_set_ss(x), _mm_setzero_ps()), _mm_set_ss((float)RBINS)));
#else
  return x > 0.0f ? (x < (float)RBINS ? x : (float)RBINS) : 0.0f;
#endif
}
static mt_status select_trimmed(const float *v, int64_t n, int64_t k, int64_t *part, int32_t *oi, float *ov,
                                int64_t *count) {
  double sum = 0, mx = 0;
  int64_t nf = 0;
#pragma omp parallel for reduction(+ : sum, nf) reduction(max : mx) schedule(static) if (n >= PAR_MIN)
  for (int64_t i = 0; i < n; i++) {
    double a = fabs((double)v[i]);
    if (isfinite(a)) {
      sum += a;
      nf++;
      if (a > mx) mx = a;
    }
  }
  double mean = nf ? sum / (double)nf : 0, span = mx - mean;
  int nt = mt_get_num_threads();
  /* slot 8 + b: r in [b, b+1) / RBINS, the top one also takes inf and NaN; slots 0..7 take
   * the half of v below the mean, spread by index so that their increments do not queue on
   * one counter. Branch-free float binning (a branch on the mean mispredicts half the time);
   * binning only guides the choice of r, the gathering count checks it. */
#define RSLOTS (RBINS + 8)
  uint32_t *hist = calloc((size_t)nt * RSLOTS, sizeof *hist);
  if (!hist) return mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate %d histograms", nt);
  int used = 1;
  if (span > 0) {
    float fm = (float)mean, fs = (float)(RBINS / span);
#pragma omp parallel if (n >= PAR_MIN)
    {
      int T = num_threads(), t = thread_num();
      uint32_t *h = hist + (size_t)t * RSLOTS;
      int64_t lo = n * t / T, hi = n * (t + 1) / T;
      for (int64_t i = lo; i < hi; i++) {
        uint32_t key = key_of(v[i]);
        float x = (fabsf(v[i]) - fm) * fs + 1.0f; /* < 1: below the mean */
        int b1 = (int)clamp_bins(x);
        b1 = key >= 0x7f800000u ? RBINS : b1;
        h[b1 + 7 + (b1 == 0) * ((int)(i & 7) - 7)]++; /* b1 == 0: slot i & 7, without a branch */
      }
      if (t == 0) used = T;
    }
  }
  int64_t cum = 0;
  int bin = RBINS - 1;
  for (; bin >= 0 && span > 0; bin--) {
    for (int t = 0; t < used; t++) cum += hist[(size_t)t * RSLOTS + 8 + bin];
    if (cum >= k) break;
  }
  free(hist);
  /* bin < 0 or no spread: fewer than k reach the mean, so every element is a candidate */
  chunks ch;
  uint32_t tk = 0;
  int64_t c = 0;
  for (;; bin--) {
    tk = bin < 0 || span <= 0 ? 0 : key_of((float)(mean + span * bin / RBINS));
    c = tk == 0 ? pack_count(v, n, 0, INT64_MAX, part, &ch) : pack_count(v, n, tk - 1, 0, part, &ch);
    if (c >= k) break; /* float rounding of t can exclude a bin's lowest element: step down */
  }
  int32_t *ci = malloc((size_t)c * sizeof *ci);
  float *cv = malloc((size_t)c * sizeof *cv);
  mt_status st = MT_OK;
  if (!ci || !cv) {
    st = mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate %lld candidates", (long long)c);
  } else {
    if (tk == 0) pack_write(v, NULL, n, 0, INT64_MAX, &ch, ci, cv);
    else pack_write(v, NULL, n, tk - 1, 0, &ch, ci, cv);
    st = select_exact(cv, ci, c, k, part, oi, ov, count);
  }
  free(ci);
  free(cv);
  return st;
}

/* One pass of the sampled method: every element with key >= g, counted, and gathered in
 * index order into NCHUNK per-chunk buffers of room 3 * want * (chunk / n) + SLOP pairs each.
 * The chunk count is fixed, so the result does not depend on the thread count. The store is
 * unconditional and the key decides whether it stays, so the loop has no data-dependent
 * branch. *total: the count; *held: 0 when a chunk had more than its room (its buffer is then
 * incomplete, the count still right). */
#define NCHUNK 32
#define SLOP 1024
/* fewer hits than SHITS: a count off by the sample's error (about 1/sqrt(hits)) is still
 * held (room for 3 * want) and trimmed by exact, and a 4x smaller sample lets the method run
 * on tensors 4x shorter (n >= 8 * hits / density) */
#define SAMPLED_HITS 64.0
typedef struct {
  int32_t *idx;
  float *val;
  int64_t room[NCHUNK], start[NCHUNK], got[NCHUNK];
} gathered;

static void gather_ge(const float *v, int64_t n, uint32_t g, gathered *b, int64_t *total, int *held) {
#pragma omp parallel for schedule(static, 1) if (n >= PAR_MIN)
  for (int c = 0; c < NCHUNK; c++) {
    int64_t lo = n * c / NCHUNK, hi = n * (c + 1) / NCHUNK, room = b->room[c], o = 0, i = lo;
    int32_t *ci = b->idx + b->start[c];
    float *cv = b->val + b->start[c];
    for (; i < hi && o < room; i++) {
      ci[o] = (int32_t)i;
      cv[o] = v[i];
      o += key_of(v[i]) >= g;
    }
    for (; i < hi; i++) o += key_of(v[i]) >= g; /* past the room: count only */
    b->got[c] = o;
  }
  int64_t t = 0;
  *held = 1;
  for (int c = 0; c < NCHUNK; c++) {
    t += b->got[c];
    if (b->got[c] > b->room[c]) *held = 0;
  }
  *total = t;
}

/* DGC's selection: the sample's key at the rank matching want = (k + kmax) / 2, one gathering
 * pass. A count in [k, kmax] is the answer (gathered, or if a chunk overflowed packed in two
 * passes at the same key); above kmax with everything gathered, exact's k of the gathered;
 * otherwise the rank moves by want / count and the pass runs once more. *done = 0 when both
 * tries missed (nothing written). */
static mt_status select_sampled(const float *v, int64_t n, int64_t k, int64_t kmax, int64_t *part, int32_t *oi,
                                float *ov, int64_t *count, int *done) {
  *done = 0;
  int64_t want = (k + kmax) / 2, s = (int64_t)(SAMPLED_HITS * (double)n / (double)k);
  if (n < PAR_MIN || s > n / 8) return MT_OK;
  gathered b;
  int64_t cap = 0;
  for (int c = 0; c < NCHUNK; c++) {
    int64_t lo = n * c / NCHUNK, hi = n * (c + 1) / NCHUNK;
    b.room[c] = (int64_t)(3.0 * (double)want * (double)(hi - lo) / (double)n) + SLOP;
    b.start[c] = cap;
    cap += b.room[c];
  }
  float *smp = sample(v, n, &s);
  b.idx = malloc((size_t)cap * sizeof *b.idx);
  b.val = malloc((size_t)cap * sizeof *b.val);
  mt_status st = MT_OK;
  if (!smp || !b.idx || !b.val) {
    st = mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate the sampled method's %lld candidates", (long long)cap);
  } else {
    double r = (double)want * (double)s / (double)n;
    for (int attempt = 0; attempt < 2; attempt++) {
      int64_t rk = r < 1 ? 1 : r > (double)s ? s : (int64_t)r, c = 0, ngt;
      uint32_t g;
      int held;
      if ((st = kth_key(smp, s, rk, &g, &ngt)) != MT_OK || g == 0) break; /* a sample of zeros: exact */
      gather_ge(v, n, g, &b, &c, &held);
      if (c >= k && c <= kmax && !held) {
        *count = pack_ge(v, n, g, part, oi, ov);
      } else if (c >= k && held) { /* the chunks' candidates, moved together in index order */
        int64_t o = 0;
        for (int ch = 0; ch < NCHUNK; ch++) {
          memmove(b.idx + o, b.idx + b.start[ch], sizeof(int32_t) * (size_t)b.got[ch]);
          memmove(b.val + o, b.val + b.start[ch], sizeof(float) * (size_t)b.got[ch]);
          o += b.got[ch];
        }
        if (o <= kmax) {
          memcpy(oi, b.idx, sizeof(int32_t) * (size_t)o);
          memcpy(ov, b.val, sizeof(float) * (size_t)o);
          *count = o;
        } else {
          st = select_exact(b.val, b.idx, o, k, part, oi, ov, count);
        }
      } else {
        r = r * (double)want / (double)(c > 0 ? c : 1); /* the rank the count asks for */
        continue;
      }
      *done = st == MT_OK;
      break;
    }
  }
  free(smp);
  free(b.idx);
  free(b.val);
  return st;
}

/* v: n float32 (n >= 1, within int32 indices); idx, val: room for k pairs (exact, trimmed) or
 * kmax (threshold, sampled); *count: the pairs written */
mt_status mt__cpu_dist_topk(const mt_tensor *v, int64_t k, int64_t kmax, int method, mt_tensor *idx, mt_tensor *val,
                            int64_t *count) {
  int64_t n = mt__numel(v);
  const float *x = (const float *)mt__data(v);
  int32_t *oi = (int32_t *)mt__data(idx);
  float *ov = (float *)mt__data(val);
  int64_t *part = malloc((size_t)mt_get_num_threads() * 4 * sizeof *part);
  if (!part) return mt__error(MT_ERR_MEMORY, "dist.topk: out of memory");
  mt_status st = MT_OK;
  if (method == MT_TOPK_EXACT) {
    st = select_exact(x, NULL, n, k, part, oi, ov, count);
  } else if (method == MT_TOPK_THRESHOLD) {
    uint32_t t = 0;
    int found = 0;
    st = find_threshold(x, n, k, kmax, &t, &found);
    if (st == MT_OK && found) *count = pack_ge(x, n, t, part, oi, ov);
    else if (st == MT_OK) /* ties at the k-th magnitude overflow kmax: trim to exact's k */
      st = select_exact(x, NULL, n, k, part, oi, ov, count);
  } else if (method == MT_TOPK_SAMPLED) {
    int done = 0;
    st = select_sampled(x, n, k, kmax, part, oi, ov, count, &done);
    if (st == MT_OK && !done) st = select_exact(x, NULL, n, k, part, oi, ov, count);
  } else {
    st = select_trimmed(x, n, k, part, oi, ov, count);
  }
  free(part);
  return st;
}
