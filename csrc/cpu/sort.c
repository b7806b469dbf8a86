/* sort.c: CPU sort and topk along one dimension.
 *
 * Each line gets 64-bit keys whose unsigned order is the wanted order: floats map through
 * their bit pattern (NaN above +inf, -0 equal to +0), integers through a sign flip, and
 * descending order complements the key. Ties are broken by position, which makes sort stable
 * and topk pick the lowest positions among equal values. Lines are sorted by an LSD radix sort
 * (long lines) or a merge sort; topk with k small next to the line length keeps a bounded
 * max-heap (O(n log k)) instead. Values are copied from the input as raw elements, so they are
 * bit-exact for every dtype (the entry point guarantees the outputs do not overlap it). The
 * keys are made per dtype by generic/sort.c; the sorting itself is on keys only. */
#include <stdlib.h>
#include <string.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"
#include "generate.h"

typedef struct {
  uint64_t k; /* order key */
  int64_t i;  /* position in the line */
} kv;

static inline int kv_less(kv a, kv b) { return a.k < b.k || (a.k == b.k && a.i < b.i); }

static inline uint64_t key_double(double x) {
  if (x != x) return UINT64_MAX; /* every NaN is the same, largest value */
  if (x == 0) x = 0;             /* -0 sorts as +0 */
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return (u >> 63) ? ~u : u | (1ull << 63);
}
static inline uint64_t key_int(int64_t x) { return (uint64_t)x ^ (1ull << 63); }
#define KEY_OF(v) _Generic((v), float : key_double, double : key_double, default : key_int)(v)

/* make_keys_<dtype> for every dtype */
#define MT_GENERIC_FILE "generic/sort.c"
#include "generate_all.h"

#define KEYS_CASE(E, N, T, CT) \
  case E: make_keys_##N((const T *)line, stride, n, flip, p); break;
/* keys of the n elements line[0], line[stride], ... */
static void make_keys(mt_dtype dt, const void *line, int64_t stride, int64_t n, uint64_t flip, kv *p) {
  switch (dt) {
    MT_DTYPE_LIST(KEYS_CASE)
    default: break;
  }
}

static void insertion_sort(kv *p, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    kv x = p[i];
    int64_t j = i;
    for (; j > 0 && kv_less(x, p[j - 1]); j--) p[j] = p[j - 1];
    p[j] = x;
  }
}

static void merge(const kv *a, int64_t na, const kv *b, int64_t nb, kv *out) {
  int64_t i = 0, j = 0, o = 0;
  while (i < na && j < nb) out[o++] = kv_less(b[j], a[i]) ? b[j++] : a[i++];
  while (i < na) out[o++] = a[i++];
  while (j < nb) out[o++] = b[j++];
}

/* sort p[0..n) with tmp[0..n) as scratch */
static void merge_sort(kv *p, kv *tmp, int64_t n) {
  enum { RUN = 16 };
  for (int64_t s = 0; s < n; s += RUN) insertion_sort(p + s, n - s < RUN ? n - s : RUN);
  kv *src = p, *dst = tmp;
  for (int64_t w = RUN; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      if (mid == hi || kv_less(src[mid - 1], src[mid])) memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *src);
      else merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
    }
    kv *t = src;
    src = dst, dst = t;
  }
  if (src != p) memcpy(p, src, (size_t)n * sizeof *p);
}

/* Stable LSD radix sort on the keys, 8 bits per pass; passes whose byte is the same in every
 * key are skipped (float32 data widened to double keys leaves 3 such bytes). p must be in
 * position order on entry, so equal keys stay in position order. */
static void radix_sort(kv *p, kv *tmp, int64_t n) {
  int64_t cnt[8][256];
  memset(cnt, 0, sizeof cnt);
  for (int64_t i = 0; i < n; i++)
    for (int b = 0; b < 8; b++) cnt[b][(p[i].k >> (8 * b)) & 255]++;
  kv *src = p, *dst = tmp;
  for (int b = 0; b < 8; b++) {
    if (cnt[b][(p[0].k >> (8 * b)) & 255] == n) continue;
    int64_t off[256], sum = 0;
    for (int d = 0; d < 256; d++) off[d] = sum, sum += cnt[b][d];
    for (int64_t i = 0; i < n; i++) dst[off[(src[i].k >> (8 * b)) & 255]++] = src[i];
    kv *t = src;
    src = dst, dst = t;
  }
  if (src != p) memcpy(p, src, (size_t)n * sizeof *p);
}

/* whole lines in position order: radix sort when long enough to pay for its passes */
static void sort_line(kv *p, kv *tmp, int64_t n) {
  if (n >= 512) radix_sort(p, tmp, n);
  else merge_sort(p, tmp, n);
}

static void sift_down(kv *h, int64_t k, int64_t i) {
  kv x = h[i];
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= k) break;
    if (c + 1 < k && kv_less(h[c], h[c + 1])) c++;
    if (!kv_less(x, h[c])) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = x;
}

/* Move the k least of p[0..n) into p[0..k), in order. */
static void select_least(kv *p, kv *tmp, int64_t n, int64_t k) {
  if (k == 0) return;
  if (k > n / 8) { /* a large share of the line: sorting all of it is as cheap */
    sort_line(p, tmp, n);
    return;
  }
  for (int64_t i = k / 2; i-- > 0;) sift_down(p, k, i); /* max-heap of the first k */
  for (int64_t i = k; i < n; i++)
    if (kv_less(p[i], p[0])) {
      p[0] = p[i];
      sift_down(p, k, 0);
    }
  merge_sort(p, tmp, k);
}

/* the values at positions p[0..m).i of line s (stride ss) into v (stride vs), as raw elements of
 * es bytes; size is es again as a constant, so that each memcpy is one move */
static inline void write_values(char *v, int64_t vs, const char *s, int64_t ss, const kv *p, int64_t m, size_t es,
                                size_t size) {
  for (int64_t i = 0; i < m; i++) memcpy(v + i * vs * (int64_t)es, s + p[i].i * ss * (int64_t)es, size);
}

/* k < 0: sort whole lines (desc: descending); else the k least in key order (desc: largest). */
static mt_status sort_lines(const char *op, mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim,
                            int64_t k, int desc, int64_t base) {
  int64_t n = src->ndim ? src->sizes[dim] : 1, m = k < 0 ? n : k, numel = mt__numel(src);
  if (n == 0 || m == 0 || numel == 0) return MT_OK;
  int64_t lines = numel / n;
  int od = 0;
  int64_t osz[MT_MAX_DIMS], sst[MT_MAX_DIMS], vst[MT_MAX_DIMS], ist[MT_MAX_DIMS];
  for (int d = 0; d < src->ndim; d++) {
    if (d == dim) continue;
    osz[od] = src->sizes[d], sst[od] = src->strides[d], vst[od] = values->strides[d], ist[od] = indices->strides[d];
    od++;
  }
  int64_t ss = src->ndim ? src->strides[dim] : 0, vs = src->ndim ? values->strides[dim] : 0,
          is = src->ndim ? indices->strides[dim] : 0;
  size_t es = mt__dtype_size(src->dtype);
  const char *sp = mt__data(src);
  char *vp = mt__data(values);
  int64_t *ip = (int64_t *)mt__data(indices);
  uint64_t flip = desc ? UINT64_MAX : 0;
  int failed = 0;
#pragma omp parallel if (lines > 1 && numel * 4 > MT_PARALLEL_GRAIN)
  {
    kv *p = malloc((size_t)n * sizeof *p), *tmp = malloc((size_t)n * sizeof *tmp);
    int ok = p && tmp;
    if (!ok) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(dynamic, 16)
    for (int64_t l = 0; l < lines; l++) {
      if (!ok) continue;
      int64_t rem = l, so = 0, vo = 0, io = 0;
      for (int i = od - 1; i >= 0; i--) {
        int64_t c = rem % osz[i];
        rem /= osz[i];
        so += c * sst[i], vo += c * vst[i], io += c * ist[i];
      }
      const char *s = sp + so * (int64_t)es;
      make_keys(src->dtype, s, ss, n, flip, p);
      if (k < 0) sort_line(p, tmp, n);
      else select_least(p, tmp, n, k);
      char *v = vp + vo * (int64_t)es;
      int64_t *x = ip + io;
      switch (es) {
        case 1: write_values(v, vs, s, ss, p, m, es, 1); break;
        case 2: write_values(v, vs, s, ss, p, m, es, 2); break;
        case 4: write_values(v, vs, s, ss, p, m, es, 4); break;
        default: write_values(v, vs, s, ss, p, m, es, 8); break;
      }
      for (int64_t i = 0; i < m; i++) x[i * is] = (int64_t)((uint64_t)p[i].i + (uint64_t)base);
    }
    free(p), free(tmp);
  }
  if (failed) return mt__error(MT_ERR_MEMORY, "%s: out of host memory for a line of %lld elements", op, (long long)n);
  return MT_OK;
}

mt_status mt__cpu_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,
                       int64_t base) {
  return sort_lines("sort", values, indices, src, dim, -1, descending, base);
}

/* The k largest (largest set) or smallest, always in sorted order: equal to the first k of a
 * stable sort, which is one valid answer when sorted is not asked for too. */
mt_status mt__cpu_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim, int largest,
                       int sorted, int64_t base) {
  (void)sorted;
  return sort_lines("topk", values, indices, src, dim, k, largest, base);
}
