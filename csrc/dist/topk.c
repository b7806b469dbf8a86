/* topk.c: the selection step of residual gradient compression (RedSync, Fang et al. 2019; Deep
 * Gradient Compression, Lin et al. 2018): pick the elements of largest magnitude of a float32
 * vector and pack them as (int32 index, float value) pairs, in ascending index order.
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
 *             k elements qualify; those candidates are gathered and exact runs on them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* below this many elements a parallel region costs more than the scan */
#define PAR_MIN 32768

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
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
 * high then the low 16 bits. Keys are at most 0x7fffffff, so the high digit has 32768 bins.
 * Per-thread histograms are uint32_t: n fits int32 (checked by the caller). */
#define HBINS 65536
static mt_status kth_key(const float *v, int64_t n, int64_t k, uint32_t *kth, int64_t *n_gt) {
  int nt = max_threads();
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
    if (bin < 0) { /* counts disagree with n: cannot happen with exact integer counts */
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

/* Pack, in ascending index order, every element with key > K plus the first `take_eq` (by
 * index) with key == K. Index i is written as map ? map[i] : i. Each thread counts its chunk,
 * one thread turns the counts into offsets, then each writes its chunk from its offset: the
 * output is the same whatever the thread count. `part` holds 4 * max_threads() int64_t.
 * Returns the number written. */
static int64_t pack(const float *v, const int32_t *map, int64_t n, uint32_t K, int64_t take_eq,
                    int64_t *part, int32_t *oi, float *ov) {
  int nt = max_threads();
  int64_t *gt = part, *eq = part + nt, *off = part + 2 * nt, *eqb = part + 3 * nt;
  int64_t total = 0;
#pragma omp parallel if (n >= PAR_MIN)
  {
    int T = num_threads(), t = thread_num();
    int64_t lo = n * t / T, hi = n * (t + 1) / T, g = 0, e = 0;
    for (int64_t i = lo; i < hi; i++) {
      uint32_t key = key_of(v[i]);
      g += key > K;
      e += key == K;
    }
    gt[t] = g;
    eq[t] = e;
#pragma omp barrier
#pragma omp single
    {
      int64_t o = 0, eb = 0;
      for (int c = 0; c < T; c++) {
        int64_t te = take_eq - eb; /* ties this chunk may still take */
        te = te < 0 ? 0 : te > eq[c] ? eq[c] : te;
        off[c] = o;
        eqb[c] = eb;
        o += gt[c] + te;
        eb += eq[c];
      }
      total = o;
    } /* implicit barrier */
    int64_t o = off[t], seen = eqb[t];
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
  return total;
}

/* exactly the k largest (ties: lower index first) of v[0..n), 1 <= k <= n */
static mt_status select_exact(const float *v, const int32_t *map, int64_t n, int64_t k,
                              int64_t *part, int32_t *oi, float *ov, int64_t *count) {
  uint32_t K;
  int64_t n_gt;
  MT_TRY(kth_key(v, n, k, &K, &n_gt));
  *count = pack(v, map, n, K, k - n_gt, part, oi, ov);
  return MT_OK;
}

/* A threshold key t with count(key >= t) in [k, kmax]: from a pseudo-random sample (fixed
 * seed: the same v gives the same result) guess the key at the matching rank, count on the
 * whole of v, correct the rank by the ratio missed (a few secant steps), then bisect the
 * bracket of keys. Returns 0 in *found when ties make the range unreachable. */
static mt_status find_threshold(const float *v, int64_t n, int64_t k, int64_t kmax, uint32_t *thr,
                                int *found) {
  uint64_t lo = 0, hi = 0x80000000u; /* count(>= lo) >= k; count(>= hi) = 0 < k */
  int64_t want = (k + kmax) / 2;
  /* the sample must hold ~200 of the selected elements for its ranks to mean something */
  double s_d = 200.0 * (double)n / (double)k;
  int64_t s = s_d > (double)n / 4 ? 0 : (int64_t)s_d;
  if (s >= 4096) {
    float *smp = malloc((size_t)s * sizeof *smp);
    if (!smp) return mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate a sample of %lld", (long long)s);
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int64_t j = 0; j < s; j++) { /* xorshift64 */
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      smp[j] = v[x % (uint64_t)n];
    }
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
   * still qualifies (checked here: with slack the whole of v may fit) */
  int64_t c = count_ge(v, n, lo);
  *thr = (uint32_t)lo;
  *found = c >= k && c <= kmax;
  return MT_OK;
}

/* RedSync's trimmed top-k: candidates above mean + r*(max-mean) of the finite |v| (non-finite
 * ones are always candidates), then exact on the candidates. */
static mt_status select_trimmed(const float *v, int64_t n, int64_t k, int64_t *part, int32_t *oi,
                                float *ov, int64_t *count) {
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
  double mean = nf ? sum / (double)nf : 0;
  uint32_t tk = 0;
  /* r = 1 - 2^-j for j = 12..1, then the mean, then everything */
  for (int j = 12; j >= -1; j--) {
    double r = j > 0 ? 1.0 - ldexp(1.0, -j) : 0.0;
    float t = j >= 0 ? (float)(mean + r * (mx - mean)) : 0.0f;
    tk = key_of(t);
    if (tk == 0 || count_ge(v, n, tk) >= k) break;
  }
  int64_t c = count_ge(v, n, tk);
  int32_t *ci = malloc((size_t)c * sizeof *ci);
  float *cv = malloc((size_t)c * sizeof *cv);
  mt_status st = MT_OK;
  if (!ci || !cv) {
    st = mt__error(MT_ERR_MEMORY, "dist.topk: cannot allocate %lld candidates", (long long)c);
  } else {
    /* key >= tk is key > tk-1 with no ties taken; tk == 0 means all */
    int64_t got = tk == 0 ? pack(v, NULL, n, 0, INT64_MAX, part, ci, cv)
                          : pack(v, NULL, n, tk - 1, 0, part, ci, cv);
    st = select_exact(cv, ci, got, k, part, oi, ov, count);
  }
  free(ci);
  free(cv);
  return st;
}

static mt_status check_out(const mt_tensor *t, const char *name, int dtype, const char *dname) {
  if (!t) return mt__error(MT_ERR_ARG, "dist.topk: %s is NULL", name);
  if (mt_tensor_dtype(t) != dtype)
    return mt__error(MT_ERR_DTYPE, "dist.topk: %s must be a %s tensor", name, dname);
  if (mt_tensor_device(t) != -1) return mt__error(MT_ERR_DEVICE, "dist.topk: %s must be a CPU tensor", name);
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_SHAPE, "dist.topk: %s must be contiguous", name);
  return MT_OK;
}

mt_status mt_dist_topk(const mt_tensor *v, double density, int method, double slack, mt_tensor *idx,
                       mt_tensor *val, int64_t *count) {
  if (!count) return mt__error(MT_ERR_ARG, "dist.topk: count is NULL");
  *count = 0;
  if (!v) return mt__error(MT_ERR_ARG, "dist.topk: v is NULL");
  if (mt_tensor_dtype(v) != MT_F32)
    return mt__error(MT_ERR_DTYPE, "dist.topk: v must be a float32 tensor (a FloatTensor)");
  if (mt_tensor_device(v) != -1)
    return mt__error(MT_ERR_DEVICE, "dist.topk: v must be a CPU tensor (CUDA is not supported yet)");
  if (!mt_tensor_is_contiguous(v)) return mt__error(MT_ERR_SHAPE, "dist.topk: v must be contiguous");
  if (!(density > 0 && density <= 1))
    return mt__error(MT_ERR_ARG, "dist.topk: density must be in (0, 1], got %g", density);
  if (method < MT_TOPK_EXACT || method > MT_TOPK_TRIMMED)
    return mt__error(MT_ERR_ARG, "dist.topk: unknown method %d (0: exact, 1: threshold, 2: trimmed)", method);
  if (!(slack >= 0 && slack <= 1e6))
    return mt__error(MT_ERR_ARG, "dist.topk: slack must be >= 0, got %g", slack);
  MT_TRY(check_out(idx, "idx", MT_I32, "int32"));
  MT_TRY(check_out(val, "val", MT_F32, "float32"));
  int64_t n = mt_tensor_numel(v), cap = mt_tensor_numel(idx);
  if (cap != mt_tensor_numel(val))
    return mt__error(MT_ERR_SHAPE, "dist.topk: idx and val must have the same number of elements (%lld and %lld)",
                     (long long)cap, (long long)mt_tensor_numel(val));
  /* indices travel as int32 */
  if (n > INT32_MAX)
    return mt__error(MT_ERR_SHAPE, "dist.topk: v has %lld elements, more than int32 indices can address",
                     (long long)n);
  int64_t k = n == 0 ? 0 : (int64_t)ceil(density * (double)n);
  if (n > 0 && k < 1) k = 1;
  if (k > n) k = n;
  int64_t kmax = (int64_t)floor((double)k * (1.0 + slack));
  if (kmax > n) kmax = n;
  int64_t need = method == MT_TOPK_THRESHOLD ? kmax : k;
  if (cap < need)
    return mt__error(MT_ERR_SHAPE, "dist.topk: idx/val hold %lld elements, the %s method may return %lld",
                     (long long)cap, method == MT_TOPK_EXACT ? "exact" : method == MT_TOPK_THRESHOLD ? "threshold" : "trimmed",
                     (long long)need);
  if (n == 0) return MT_OK;
  const float *x = mt_tensor_data(v);
  int32_t *oi = mt_tensor_data(idx);
  float *ov = mt_tensor_data(val);
  int64_t *part = malloc((size_t)max_threads() * 4 * sizeof *part);
  if (!part) return mt__error(MT_ERR_MEMORY, "dist.topk: out of memory");
  mt_status st = MT_OK;
  if (method == MT_TOPK_EXACT) {
    st = select_exact(x, NULL, n, k, part, oi, ov, count);
  } else if (method == MT_TOPK_THRESHOLD) {
    uint32_t t = 0;
    int found = 0;
    st = find_threshold(x, n, k, kmax, &t, &found);
    if (st == MT_OK && found)
      *count = t == 0 ? pack(x, NULL, n, 0, INT64_MAX, part, oi, ov) : pack(x, NULL, n, t - 1, 0, part, oi, ov);
    else if (st == MT_OK) /* ties at the k-th magnitude overflow kmax: trim to exact's k */
      st = select_exact(x, NULL, n, k, part, oi, ov, count);
  } else {
    st = select_trimmed(x, n, k, part, oi, ov, count);
  }
  free(part);
  return st;
}
