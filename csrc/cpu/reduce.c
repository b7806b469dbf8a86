/* reduce.c: CPU reductions: sum, prod, mean, max/min (+ indices), argmax/argmin, var/std,
 * p-norms, any/all, over one dimension or the whole tensor.
 *
 * Layout: a's dimensions are put in decreasing-stride order (so memory order is row-major;
 * a layout with gaps or broadcasts is first gathered into a dense buffer). The reduction is
 * then over a dense (outer, n, inner) block:
 *  - inner == 1: each result folds one contiguous line of n values;
 *  - inner > 1: rows of up to CB columns are folded into per-column accumulators, so reads
 *    stay sequential however large the stride of the reduced dimension is.
 * Input is converted a block at a time into double (floating dtypes: f32/f16/bf16 sums then
 * accumulate in double) or int64 (integer dtypes, exact and wrapping), so each op's loop is
 * written once per compute type and never switches on anything per element.
 * Variance is two-pass (mean, then squared deviations) for accuracy. Max/min propagate NaN
 * and report the first NaN's index; ties report the first position. Parallel splits of one
 * line use fixed chunk boundaries, so results do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "cpu.h"

enum {
  BLK = 2048,   /* elements converted per block */
  CB = 8192,    /* columns per block when inner > 1 */
  MAXCH = 32,   /* most row chunks per column block */
  LB = 256,     /* results per batch when inner == 1 */
  CHUNK = 65536 /* elements per task when one line is split across threads */
};

/* What each element contributes. VAR/STD run A_SUM (for the mean) and then A_SQDEV. */
typedef enum { A_SUM, A_SQDEV, A_PROD, A_MAX, A_MIN, A_ANY, A_ALL, A_NZ, A_ABS, A_SQ, A_AMAX, A_AMIN, A_POW } acc_kind;

/* A partial result: d for double accumulators and float max/min, i for int64 ones and
 * any/all, at for the position of a max/min. */
typedef struct {
  double d;
  int64_t i, at;
} part;

typedef struct {
  mt_reduce_op op;
  acc_kind acc;
  int two_pass; /* var/std */
  int isint;    /* integer input: compute in int64 */
  mt_dtype dt;
  const char *a; /* dense input over (outer, n, inner) */
  int64_t outer, n, inner;
  double p;  /* var/std correction, norm order */
  char *out; /* dense results, outer*inner of them */
  mt_dtype odt;
  int oint;     /* results are integers (held in int64) rather than doubles */
  int64_t *idx; /* dense positions, or NULL */
  int64_t base;
} rctx;

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- conversion of blocks ---- */

#define MT_GENERIC_FILE "generic/reduce.c"
#include "generate_all.h"

/* cnt values from element `start` into buf, converted to the compute type (double or int64);
 * f64 and i64 data is used in place */
#define LOAD_DOUBLE_CASE(E, N, T, CT) \
  case E: load_double_##N(base, start, cnt, buf); break;
static const double *load_d(mt_dtype dt, const char *base, int64_t start, int64_t cnt, double *buf) {
  if (dt == MT_F64) return (const double *)base + start;
  switch (dt) {
    MT_FLOAT_DTYPE_LIST(LOAD_DOUBLE_CASE)
    default: break;
  }
  return buf;
}
#define LOAD_INT64_CASE(E, N, T, CT) \
  case E: load_int64_##N(base, start, cnt, buf); break;
static const int64_t *load_i(mt_dtype dt, const char *base, int64_t start, int64_t cnt, int64_t *buf) {
  if (dt == MT_I64) return (const int64_t *)base + start;
  switch (dt) {
    MT_INT_DTYPE_LIST(LOAD_INT64_CASE)
    default: break;
  }
  return buf;
}

#define STORE_DOUBLE_CASE(E, N, T, CT) \
  case E: store_double_##N(base, start, cnt, v); break;
static void store_d(mt_dtype dt, char *base, int64_t start, int64_t cnt, const double *v) {
  switch (dt) {
    MT_FLOAT_DTYPE_LIST(STORE_DOUBLE_CASE)
    default: break;
  }
}
#define STORE_INT64_CASE(E, N, T, CT) \
  case E: store_int64_##N(base, start, cnt, v); break;
static void store_i(mt_dtype dt, char *base, int64_t start, int64_t cnt, const int64_t *v) {
  switch (dt) {
    MT_DTYPE_LIST(STORE_INT64_CASE)
    default: break;
  }
}

/* ---- folding contiguous segments into a part ---- */

static part part_init(acc_kind k) {
  part p = {0, 0, 0};
  if (k == A_PROD) p.d = 1, p.i = 1;
  else if (k == A_ALL) p.i = 1;
  else if (k == A_AMIN) p.d = INFINITY;
  return p;
}

/* GCC/Clang vector extensions (2 doubles per vector, any target): compilers do not vectorise
 * a NaN-exact `x > m ? x : m` reduction by themselves. */
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2l __attribute__((vector_size(16)));
static inline v2d v2d_load(const double *p) {
  v2d x;
  memcpy(&x, p, sizeof x);
  return x;
}
static inline v2d v2d_pick(v2l m, v2d a, v2d b) { return (v2d)(((v2l)a & m) | ((v2l)b & ~m)); }

/* Max/min of a segment in two steps: the extreme value by a branch-free pass, then, only when
 * it beats the running best, the position of its first occurrence. A NaN (seen as a
 * non-finite x - x) sends the segment to the plain scan, which stops at the first NaN: that
 * NaN is the result. */
static void seg_extreme_d(int larger, const double *v, int64_t len, int64_t off, int first, part *pt) {
  if (!len || (!first && pt->d != pt->d)) return;
  v2d l[4], z[4];
  int64_t i = 0;
  for (int k = 0; k < 4; k++) l[k] = (v2d){v[0], v[0]}, z[k] = (v2d){0, 0};
  for (; i + 8 <= len; i += 8)
    for (int k = 0; k < 4; k++) {
      v2d x = v2d_load(v + i + 2 * k);
      l[k] = v2d_pick(larger ? x > l[k] : x < l[k], x, l[k]);
      z[k] += x - x;
    }
  double m = v[0], zs = 0;
  for (int k = 0; k < 4; k++)
    for (int q = 0; q < 2; q++) {
      m = larger ? (l[k][q] > m ? l[k][q] : m) : (l[k][q] < m ? l[k][q] : m);
      zs += z[k][q];
    }
  for (; i < len; i++) {
    m = larger ? (v[i] > m ? v[i] : m) : (v[i] < m ? v[i] : m);
    zs += v[i] - v[i];
  }
  if (zs == zs) {                                            /* no NaN (nor infinity) */
    if (!first && !(larger ? m > pt->d : m < pt->d)) return; /* ties keep the earlier position */
    int64_t j = 0;
    while (v[j] != m) j++;
    pt->d = v[j], pt->at = off + j;
    return;
  }
  double b = pt->d;
  int64_t at = pt->at;
  i = 0;
  if (first) b = v[0], at = off, i = 1;
  /* !(x <= b): x > b or x is NaN (b is never NaN inside the loop) */
  if (larger) {
    for (; i < len && b == b; i++)
      if (!(v[i] <= b)) b = v[i], at = off + i;
  } else {
    for (; i < len && b == b; i++)
      if (!(v[i] >= b)) b = v[i], at = off + i;
  }
  pt->d = b, pt->at = at;
}

static void seg_extreme_i(int larger, const int64_t *v, int64_t len, int64_t off, int first, part *pt) {
  if (!len) return;
  int64_t l[4], i = 0;
  for (int k = 0; k < 4; k++) l[k] = v[0];
  if (larger) {
    for (; i + 4 <= len; i += 4)
      for (int k = 0; k < 4; k++) l[k] = v[i + k] > l[k] ? v[i + k] : l[k];
  } else {
    for (; i + 4 <= len; i += 4)
      for (int k = 0; k < 4; k++) l[k] = v[i + k] < l[k] ? v[i + k] : l[k];
  }
  int64_t m = l[0];
  for (int k = 1; k < 4; k++) m = larger ? (l[k] > m ? l[k] : m) : (l[k] < m ? l[k] : m);
  for (; i < len; i++) m = larger ? (v[i] > m ? v[i] : m) : (v[i] < m ? v[i] : m);
  if (!first && !(larger ? m > pt->i : m < pt->i)) return;
  int64_t j = 0;
  while (v[j] != m) j++;
  pt->i = m, pt->at = off + j;
}

/* the functions below are always inlined, and called with a constant kind k: each call
 * compiles to the loop of that kind alone */

/* what element x adds to a sum of kind k (mean: A_SQDEV's, p: A_POW's) */
MT_ALWAYS_INLINE double term(acc_kind k, double x, double mean, double p) {
  switch (k) {
    case A_SQDEV: return (x - mean) * (x - mean);
    case A_ABS: return fabs(x);
    case A_SQ: return x * x;
    case A_NZ: return (double)(x != 0);
    case A_POW: return pow(fabs(x), p);
    default: return x; /* A_SUM */
  }
}

/* Add the terms of v[0..len) to pt->d in 8 independent lanes: vectorisable, and more accurate
 * than one running sum. */
MT_ALWAYS_INLINE void sum_lanes(acc_kind k, const double *v, int64_t len, double mean, double p, part *pt) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8)
    for (int j = 0; j < 8; j++) lane[j] += term(k, v[i + j], mean, p);
  for (; i < len; i++) tail += term(k, v[i], mean, p);
  pt->d += ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])) + tail;
}

/* any/all of v[0..len) after the answer r so far: scan while it is still open */
static inline int64_t any_d(int64_t r, const double *v, int64_t len) {
  for (int64_t i = 0; i < len && !r; i++) r = v[i] != 0;
  return r;
}
static inline int64_t all_d(int64_t r, const double *v, int64_t len) {
  for (int64_t i = 0; i < len && r; i++) r = v[i] != 0;
  return r;
}
static inline int64_t any_i(int64_t r, const int64_t *v, int64_t len) {
  for (int64_t i = 0; i < len && !r; i++) r = v[i] != 0;
  return r;
}
static inline int64_t all_i(int64_t r, const int64_t *v, int64_t len) {
  for (int64_t i = 0; i < len && r; i++) r = v[i] != 0;
  return r;
}

/* Fold v[0..len) (positions off..off+len-1 of the line) into *pt. `first`: pt holds no
 * element yet, so max/min start from v[0]. A NaN max/min stops the scan: it is final. */
static void seg_d(acc_kind k, const double *v, int64_t len, int64_t off, double mean, double p, int first, part *pt) {
  switch (k) {
    case A_SUM: sum_lanes(A_SUM, v, len, mean, p, pt); break;
    case A_SQDEV: sum_lanes(A_SQDEV, v, len, mean, p, pt); break;
    case A_ABS: sum_lanes(A_ABS, v, len, mean, p, pt); break;
    case A_SQ: sum_lanes(A_SQ, v, len, mean, p, pt); break;
    case A_NZ: sum_lanes(A_NZ, v, len, mean, p, pt); break;
    case A_POW: sum_lanes(A_POW, v, len, mean, p, pt); break;
    case A_PROD: {
      double r = pt->d;
      for (int64_t i = 0; i < len; i++) r *= v[i];
      pt->d = r;
      break;
    }
    case A_MAX:
    case A_MIN: seg_extreme_d(k == A_MAX, v, len, off, first, pt); break;
    case A_AMAX:
    case A_AMIN: {
      double m = pt->d;
      if (k == A_AMAX) {
        for (int64_t i = 0; i < len && m == m; i++)
          if (!(fabs(v[i]) <= m)) m = fabs(v[i]);
      } else {
        for (int64_t i = 0; i < len && m == m; i++)
          if (!(fabs(v[i]) >= m)) m = fabs(v[i]);
      }
      pt->d = m;
      break;
    }
    case A_ANY: pt->i = any_d(pt->i, v, len); break;
    case A_ALL: pt->i = all_d(pt->i, v, len); break;
  }
}

/* Integer inputs: sums and products wrap (two's complement) instead of overflowing. */
static void seg_i(acc_kind k, const int64_t *v, int64_t len, int64_t off, int first, part *pt) {
  switch (k) {
    case A_SUM: {
      uint64_t l[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t = (uint64_t)pt->i;
      int64_t i = 0;
      for (; i + 8 <= len; i += 8)
        for (int j = 0; j < 8; j++) l[j] += (uint64_t)v[i + j];
      for (; i < len; i++) t += (uint64_t)v[i];
      for (int j = 0; j < 8; j++) t += l[j];
      pt->i = (int64_t)t;
      break;
    }
    case A_PROD: {
      uint64_t r = (uint64_t)pt->i;
      for (int64_t i = 0; i < len; i++) r *= (uint64_t)v[i];
      pt->i = (int64_t)r;
      break;
    }
    case A_MAX:
    case A_MIN: seg_extreme_i(k == A_MAX, v, len, off, first, pt); break;
    case A_ANY: pt->i = any_i(pt->i, v, len); break;
    case A_ALL: pt->i = all_i(pt->i, v, len); break;
    default: break; /* float-only kinds never reach integer input */
  }
}

/* l := l followed by r (r covers later positions: on ties l wins). */
static void combine(acc_kind k, int isint, part *l, const part *r) {
  switch (k) {
    case A_SUM:
    case A_SQDEV:
    case A_ABS:
    case A_SQ:
    case A_NZ:
    case A_POW:
      if (isint) l->i = (int64_t)((uint64_t)l->i + (uint64_t)r->i);
      else l->d += r->d;
      break;
    case A_PROD:
      if (isint) l->i = (int64_t)((uint64_t)l->i * (uint64_t)r->i);
      else l->d *= r->d;
      break;
    case A_MAX:
      if (isint ? r->i > l->i : (l->d == l->d && !(r->d <= l->d))) *l = *r;
      break;
    case A_MIN:
      if (isint ? r->i < l->i : (l->d == l->d && !(r->d >= l->d))) *l = *r;
      break;
    case A_AMAX:
      if (l->d == l->d && !(r->d <= l->d)) l->d = r->d;
      break;
    case A_AMIN:
      if (l->d == l->d && !(r->d >= l->d)) l->d = r->d;
      break;
    case A_ANY: l->i = l->i || r->i; break;
    case A_ALL: l->i = l->i && r->i; break;
  }
}

/* The final value of a part into slot q of the result buffers (rx: positions, or NULL). */
static void finish(const rctx *c, const part *pt, int64_t q, double *rd, int64_t *ri, int64_t *rx) {
  double n = (double)c->n;
  int64_t pos = (int64_t)((uint64_t)pt->at + (uint64_t)c->base); /* any base, without overflow */
  if (rx) rx[q] = pos;
  switch (c->op) {
    case MT_SUM:
    case MT_PROD:
    case MT_MAX:
    case MT_MIN:
      if (c->isint) ri[q] = pt->i;
      else rd[q] = pt->d;
      break;
    case MT_MEAN: rd[q] = pt->d / n; break;
    case MT_ARGMAX:
    case MT_ARGMIN: ri[q] = pos; break;
    case MT_VAR:
    case MT_STD: {
      double den = n - c->p, v = pt->d / (den > 0 ? den : 0);
      rd[q] = c->op == MT_STD ? sqrt(v) : v;
      break;
    }
    case MT_NORM: rd[q] = c->acc == A_SQ ? sqrt(pt->d) : c->acc == A_POW ? pow(pt->d, 1.0 / c->p) : pt->d; break;
    case MT_ANY:
    case MT_ALL: ri[q] = pt->i; break;
    default: break;
  }
}

static void store_results(const rctx *c, int64_t q0, int64_t cnt, const double *rd, const int64_t *ri,
                          const int64_t *rx) {
  if (c->oint) store_i(c->odt, c->out, q0, cnt, ri);
  else store_d(c->odt, c->out, q0, cnt, rd);
  if (c->idx) memcpy(c->idx + q0, rx, (size_t)cnt * sizeof *rx);
}

/* ---- inner == 1: one contiguous line per result ---- */

typedef union {
  double d[BLK];
  int64_t i[BLK];
} blockbuf;

/* Fold positions [from, from+len) of the line starting at element ls into *pt. */
static void fold_range(const rctx *c, acc_kind k, int64_t ls, int64_t from, int64_t len, double mean, int first,
                       part *pt) {
  blockbuf buf;
  for (int64_t s = 0; s < len; s += BLK) {
    int64_t m = min64(BLK, len - s);
    if (c->isint) seg_i(k, load_i(c->dt, c->a, ls + from + s, m, buf.i), m, from + s, first && !s, pt);
    else seg_d(k, load_d(c->dt, c->a, ls + from + s, m, buf.d), m, from + s, mean, c->p, first && !s, pt);
  }
}

/* One whole line. Lines longer than CHUNK are always folded as CHUNK-sized pieces combined in
 * order, in parallel when par is set, so the rounding does not depend on the thread count. */
static part fold_line(const rctx *c, acc_kind k, int64_t ls, double mean, int par) {
  int64_t n = c->n, nch = (n + CHUNK - 1) / CHUNK;
  part r = part_init(k), *parts = par && nch > 1 ? malloc((size_t)nch * sizeof *parts) : NULL;
  if (!parts) { /* sequential (also when there is no memory for the split) */
    for (int64_t ch = 0; ch < nch; ch++) {
      part q = part_init(k);
      fold_range(c, k, ls, ch * CHUNK, min64(CHUNK, n - ch * CHUNK), mean, 1, &q);
      if (ch) combine(k, c->isint, &r, &q);
      else r = q;
    }
    return r;
  }
#pragma omp parallel for schedule(static)
  for (int64_t ch = 0; ch < nch; ch++) {
    int64_t from = ch * CHUNK;
    parts[ch] = part_init(k);
    fold_range(c, k, ls, from, min64(CHUNK, n - from), mean, 1, &parts[ch]);
  }
  r = parts[0];
  for (int64_t ch = 1; ch < nch; ch++) combine(k, c->isint, &r, &parts[ch]);
  free(parts);
  return r;
}

static part line_part(const rctx *c, int64_t ls, int par) {
  if (!c->two_pass) return fold_line(c, c->acc, ls, 0, par);
  part s = fold_line(c, A_SUM, ls, 0, par);
  return fold_line(c, A_SQDEV, ls, s.d / (double)c->n, par);
}

/* Lines l0..l0+cnt-1 with n <= BLK: several lines per converted block. */
static void short_lines(const rctx *c, int64_t l0, int64_t cnt, double *rd, int64_t *ri, int64_t *rx) {
  int64_t n = c->n, g = n ? BLK / n : cnt;
  blockbuf buf;
  for (int64_t l = 0; l < cnt; l += g) {
    int64_t m = min64(g, cnt - l);
    if (c->isint) {
      const int64_t *v = n ? load_i(c->dt, c->a, (l0 + l) * n, m * n, buf.i) : buf.i;
      for (int64_t j = 0; j < m; j++) {
        part pt = part_init(c->acc);
        seg_i(c->acc, v + j * n, n, 0, 1, &pt);
        finish(c, &pt, l + j, rd, ri, rx);
      }
    } else {
      const double *v = n ? load_d(c->dt, c->a, (l0 + l) * n, m * n, buf.d) : buf.d; /* n = 0: never read */
      if (c->acc == A_SUM && !c->two_pass && n < 8) { /* very short sums: no call per line (same rounding) */
        for (int64_t j = 0; j < m; j++) {
          part pt = {0, 0, 0};
          double t = 0;
          for (int64_t q = 0; q < n; q++) t += v[j * n + q];
          pt.d = t;
          finish(c, &pt, l + j, rd, ri, rx);
        }
        continue;
      }
      for (int64_t j = 0; j < m; j++) {
        part pt = part_init(c->acc);
        if (c->two_pass) {
          seg_d(A_SUM, v + j * n, n, 0, 0, c->p, 1, &pt);
          double mean = pt.d / (double)n;
          pt = part_init(A_SQDEV);
          seg_d(A_SQDEV, v + j * n, n, 0, mean, c->p, 1, &pt);
        } else {
          seg_d(c->acc, v + j * n, n, 0, 0, c->p, 1, &pt);
        }
        finish(c, &pt, l + j, rd, ri, rx);
      }
    }
  }
}

static void reduce_lines(const rctx *c) {
  int64_t outer = c->outer, n = c->n;
  int nth = omp_get_max_threads();
  if (outer < 2 * nth && n >= 2 * CHUNK) { /* few long lines: split each one */
    for (int64_t l = 0; l < outer; l++) {
      double rd[1];
      int64_t ri[1], rx[1];
      part pt = line_part(c, l * n, 1);
      finish(c, &pt, 0, rd, ri, c->idx ? rx : NULL);
      store_results(c, l, 1, rd, ri, rx);
    }
    return;
  }
  /* batches of lines, small enough that every thread gets several */
  int64_t lb = min64(LB, outer / (4 * (int64_t)nth));
  if (lb < 1) lb = 1;
  int64_t nb = (outer + lb - 1) / lb;
#pragma omp parallel for schedule(static) if (outer * n > MT_PARALLEL_GRAIN)
  for (int64_t b = 0; b < nb; b++) {
    double rd[LB];
    int64_t ri[LB], rx[LB], l0 = b * lb, cnt = min64(lb, outer - l0);
    int64_t *rxp = c->idx ? rx : NULL;
    if (n <= BLK) {
      short_lines(c, l0, cnt, rd, ri, rxp);
    } else {
      for (int64_t l = 0; l < cnt; l++) {
        part pt = line_part(c, (l0 + l) * n, 0);
        finish(c, &pt, l, rd, ri, rxp);
      }
    }
    store_results(c, l0, cnt, rd, ri, rx);
  }
}

/* ---- inner > 1: per-column accumulators ----
 * Rows are read in long contiguous stretches (up to CB columns) and folded into one state per
 * column. Rows are grouped into at most MAXCH chunks, fixed by the shape alone, whose states
 * are combined in order: the chunks run in parallel when there are fewer column blocks than
 * threads, and the rounding is the same either way. */

/* One row x[0..w) into column maxima/minima da with positions at: the new value wins when it
 * is larger (smaller) or a NaN, unless the column already holds a NaN. Two columns per
 * vector; the NaN tests are x != x and b == b. */
static void cols_extreme_d(int larger, const double *x, int64_t w, int64_t row, double *da, int64_t *at) {
  int64_t j = 0;
  v2l rv = {row, row};
  for (; j + 2 <= w; j += 2) {
    v2d b = v2d_load(da + j), y = v2d_load(x + j);
    v2l a;
    memcpy(&a, at + j, sizeof a);
    v2l up = (b == b) & (larger ? ~(y <= b) : ~(y >= b));
    b = v2d_pick(up, y, b);
    a = (rv & up) | (a & ~up);
    memcpy(da + j, &b, sizeof b);
    memcpy(at + j, &a, sizeof a);
  }
  for (; j < w; j++) {
    double b = da[j];
    if (b == b && (larger ? !(x[j] <= b) : !(x[j] >= b))) da[j] = x[j], at[j] = row;
  }
}

/* for each remaining row r (x: its values), each column j: BODY */
#define ROWS(T, ...)                                 \
  for (; r < rows; r++) {                            \
    const T *x = v + r * ld;                         \
    for (int64_t j = 0; j < w; j++) { __VA_ARGS__; } \
  }

/* Fold `rows` rows of w columns (row r at v + r*ld, row index r0 + r) into the column states.
 * `first`: the states are empty, so max/min start from the first row. The max/min updates
 * are written as selects so that they vectorise. */
static void cols_d(acc_kind k, const double *v, int64_t rows, int64_t w, int64_t ld, int64_t r0, int first,
                   const double *mean, double p, double *da, int64_t *ia, int64_t *at) {
  int64_t r = 0;
  switch (k) {
    case A_SUM: ROWS(double, da[j] += x[j]) break;
    case A_SQDEV: ROWS(double, double e = x[j] - mean[j]; da[j] += e * e) break;
    case A_ABS: ROWS(double, da[j] += fabs(x[j])) break;
    case A_SQ: ROWS(double, da[j] += x[j] * x[j]) break;
    case A_NZ: ROWS(double, da[j] += (double)(x[j] != 0)) break;
    case A_POW: ROWS(double, da[j] += pow(fabs(x[j]), p)) break;
    case A_PROD: ROWS(double, da[j] *= x[j]) break;
    case A_MAX:
    case A_MIN:
      if (first) {
        for (int64_t j = 0; j < w; j++) da[j] = v[j], at[j] = r0;
        r = 1;
      }
      for (; r < rows; r++) cols_extreme_d(k == A_MAX, v + r * ld, w, r0 + r, da, at);
      break;
    case A_AMAX: ROWS(double, double ax = fabs(x[j]); double b = da[j]; da[j] = b == b && !(ax <= b) ? ax : b) break;
    case A_AMIN: ROWS(double, double ax = fabs(x[j]); double b = da[j]; da[j] = b == b && !(ax >= b) ? ax : b) break;
    case A_ANY: ROWS(double, ia[j] |= x[j] != 0) break;
    case A_ALL: ROWS(double, ia[j] &= x[j] != 0) break;
  }
}

static void cols_i(acc_kind k, const int64_t *v, int64_t rows, int64_t w, int64_t ld, int64_t r0, int first,
                   int64_t *ia, int64_t *at) {
  int64_t r = 0;
  switch (k) {
    case A_SUM: ROWS(int64_t, ia[j] = (int64_t)((uint64_t)ia[j] + (uint64_t)x[j])) break;
    case A_PROD: ROWS(int64_t, ia[j] = (int64_t)((uint64_t)ia[j] * (uint64_t)x[j])) break;
    case A_MAX:
    case A_MIN:
      if (first) {
        for (int64_t j = 0; j < w; j++) ia[j] = v[j], at[j] = r0;
        r = 1;
      }
      if (k == A_MAX) {
        ROWS(int64_t, int up = x[j] > ia[j]; ia[j] = up ? x[j] : ia[j]; at[j] = up ? r0 + r : at[j])
      } else {
        ROWS(int64_t, int up = x[j] < ia[j]; ia[j] = up ? x[j] : ia[j]; at[j] = up ? r0 + r : at[j])
      }
      break;
    case A_ANY: ROWS(int64_t, ia[j] |= x[j] != 0) break;
    case A_ALL: ROWS(int64_t, ia[j] &= x[j] != 0) break;
    default: break;
  }
}

/* Fold rows [r0, r1) of columns [j0, j0+w) of outer block o into the states. */
static void col_range(const rctx *c, acc_kind k, int64_t o, int64_t j0, int64_t w, int64_t r0, int64_t r1,
                      const double *mean, double *da, int64_t *ia, int64_t *at) {
  blockbuf buf;
  int64_t inner = c->inner;
  if (w == inner && inner <= BLK) { /* whole rows are adjacent: several per converted block */
    int64_t per = BLK / inner;
    for (int64_t r = r0; r < r1; r += per) {
      int64_t rows = min64(per, r1 - r), start = (o * c->n + r) * inner;
      if (c->isint) cols_i(k, load_i(c->dt, c->a, start, rows * inner, buf.i), rows, w, inner, r, r == r0, ia, at);
      else
        cols_d(k, load_d(c->dt, c->a, start, rows * inner, buf.d), rows, w, inner, r, r == r0, mean, c->p, da, ia, at);
    }
    return;
  }
  for (int64_t r = r0; r < r1; r++) /* one row at a time, in pieces of up to BLK columns */
    for (int64_t q = 0; q < w; q += BLK) {
      int64_t pw = min64(BLK, w - q), start = (o * c->n + r) * inner + j0 + q;
      if (c->isint) {
        cols_i(k, load_i(c->dt, c->a, start, pw, buf.i), 1, pw, pw, r, r == r0, ia + q, at + q);
      } else {
        cols_d(k, load_d(c->dt, c->a, start, pw, buf.d), 1, pw, pw, r, r == r0, mean ? mean + q : NULL, c->p, da + q,
               ia + q, at + q);
      }
    }
}

static void states_init(acc_kind k, int64_t w, double *da, int64_t *ia, int64_t *at) {
  part z = part_init(k);
  for (int64_t j = 0; j < w; j++) da[j] = z.d, ia[j] = z.i, at[j] = 0;
}

/* how the rows of a column block are chunked: a function of the shape only */
typedef struct {
  int64_t nch, rch; /* chunks, rows per chunk */
  double *chunks;   /* nch state sets of 3*wmax words when the chunks run in parallel */
  int64_t wmax;
} chunking;

/* Column states over all n rows: chunk states combined in chunk order. */
static void col_states(const rctx *c, acc_kind k, int64_t o, int64_t j0, int64_t w, const chunking *ck,
                       const double *mean, double *da, int64_t *ia, int64_t *at, double *scratch) {
  int64_t n = c->n, stride = 3 * ck->wmax;
  if (ck->nch == 1) {
    states_init(k, w, da, ia, at);
    col_range(c, k, o, j0, w, 0, n, mean, da, ia, at);
    return;
  }
  if (ck->chunks) {
#pragma omp parallel for schedule(static)
    for (int64_t ch = 0; ch < ck->nch; ch++) {
      double *d = ck->chunks + ch * stride;
      int64_t *i = (int64_t *)(d + w), *a = i + w;
      states_init(k, w, d, i, a);
      col_range(c, k, o, j0, w, ch * ck->rch, min64(n, (ch + 1) * ck->rch), mean, d, i, a);
    }
  }
  for (int64_t ch = 0; ch < ck->nch; ch++) {
    double *d = ck->chunks ? ck->chunks + ch * stride : scratch;
    int64_t *i = (int64_t *)(d + w), *a = i + w;
    if (!ck->chunks) { /* sequential: this chunk's states now, into the scratch set */
      states_init(k, w, d, i, a);
      col_range(c, k, o, j0, w, ch * ck->rch, min64(n, (ch + 1) * ck->rch), mean, d, i, a);
    }
    if (ch == 0) {
      memcpy(da, d, (size_t)w * sizeof *da);
      memcpy(ia, i, (size_t)w * sizeof *ia);
      memcpy(at, a, (size_t)w * sizeof *at);
      continue;
    }
    for (int64_t j = 0; j < w; j++) {
      part l = {da[j], ia[j], at[j]}, r = {d[j], i[j], a[j]};
      combine(k, c->isint, &l, &r);
      da[j] = l.d, ia[j] = l.i, at[j] = l.at;
    }
  }
}

/* One block of w columns of outer block o; ws holds 7*wmax words of workspace. */
static void col_block(const rctx *c, int64_t o, int64_t j0, int64_t w, const chunking *ck, double *ws) {
  double *da = ws, *mean = ws + ck->wmax, *scratch = ws + 2 * ck->wmax;
  int64_t *ia = (int64_t *)(ws + 5 * ck->wmax), *at = ia + ck->wmax;
  if (c->two_pass) {
    col_states(c, A_SUM, o, j0, w, ck, NULL, da, ia, at, scratch);
    for (int64_t j = 0; j < w; j++) mean[j] = da[j] / (double)c->n;
    col_states(c, A_SQDEV, o, j0, w, ck, mean, da, ia, at, scratch);
  } else {
    col_states(c, c->acc, o, j0, w, ck, NULL, da, ia, at, scratch);
  }
  for (int64_t j = 0; j < w; j++) { /* results in place of the states */
    part pt = {da[j], ia[j], at[j]};
    finish(c, &pt, j, da, ia, NULL);
    at[j] = (int64_t)((uint64_t)at[j] + (uint64_t)c->base);
  }
  store_results(c, o * c->inner + j0, w, da, ia, at);
}

static mt_status reduce_cols(const rctx *c) {
  int64_t inner = c->inner, n = c->n, nbj = (inner + CB - 1) / CB, ntask = c->outer * nbj;
  chunking ck = {1, n, NULL, min64(inner, CB)};
  int64_t want = n * ck.wmax / CHUNK;
  if (want > 1) {
    ck.rch = (n + min64(want, MAXCH) - 1) / min64(want, MAXCH);
    ck.nch = (n + ck.rch - 1) / ck.rch;
  }
  int nth = omp_get_max_threads(), split = ntask < nth && ck.nch > 1;
  /* per-thread states whole cache lines apart (8 doubles), so no two threads write one line */
  size_t ws_words = ((size_t)(7 * ck.wmax) + 7) / 8 * 8, nws = split ? 1 : (size_t)nth;
  double *ws = malloc((nws * ws_words + (split ? (size_t)(ck.nch * 3 * ck.wmax) : 0)) * sizeof(double));
  if (!ws) return mt__error(MT_ERR_MEMORY, "reduce: out of host memory for the column accumulators");
  if (split) { /* few column blocks: their row chunks go to the threads */
    ck.chunks = ws + ws_words;
    for (int64_t t = 0; t < ntask; t++) {
      int64_t j0 = (t % nbj) * CB;
      col_block(c, t / nbj, j0, min64(CB, inner - j0), &ck, ws);
    }
  } else {
#pragma omp parallel for schedule(static) if (c->outer * n * inner > MT_PARALLEL_GRAIN)
    for (int64_t t = 0; t < ntask; t++) {
      double *mine = ws + (size_t)omp_get_thread_num() * ws_words;
      int64_t j0 = (t % nbj) * CB;
      col_block(c, t / nbj, j0, min64(CB, inner - j0), &ck, mine);
    }
  }
  free(ws);
  return MT_OK;
}

/* ---- layout ---- */

/* len elements of es bytes (a constant where inlined) from s into d, ss and ds bytes apart */
MT_ALWAYS_INLINE void copy_row(char *d, int64_t ds, const char *s, int64_t ss, int64_t len, size_t es) {
  for (int64_t i = 0; i < len; i++) memcpy(d + i * ds, s + i * ss, es);
}

/* dst[...] = src[...] over an (nd, sizes) block with element strides, any element size. */
static void copy_strided(size_t es, int nd, const int64_t *sz, char *dst, const int64_t *dst_st, const char *src,
                         const int64_t *src_st) {
  if (nd == 0) {
    memcpy(dst, src, es);
    return;
  }
  int64_t len = sz[nd - 1], rows = 1;
  for (int i = 0; i < nd - 1; i++) rows *= sz[i];
  int64_t ds = dst_st[nd - 1] * (int64_t)es, ss = src_st[nd - 1] * (int64_t)es;
#pragma omp parallel for schedule(static) if (rows * len > MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t rem = r, doff = 0, soff = 0;
    for (int i = nd - 2; i >= 0; i--) {
      int64_t k = rem % sz[i];
      rem /= sz[i];
      doff += k * dst_st[i];
      soff += k * src_st[i];
    }
    char *d = dst + doff * (int64_t)es;
    const char *s = src + soff * (int64_t)es;
    switch (es) {
      case 1: copy_row(d, ds, s, ss, len, 1); break;
      case 2: copy_row(d, ds, s, ss, len, 2); break;
      case 4: copy_row(d, ds, s, ss, len, 4); break;
      default: copy_row(d, ds, s, ss, len, 8); break;
    }
  }
}

/* row-major dense over (nd, sz) with these strides (size-1 dimensions do not matter) */
static int dense(int nd, const int64_t *sz, const int64_t *st) {
  int64_t expect = 1;
  for (int i = nd - 1; i >= 0; i--) {
    if (sz[i] == 1) continue;
    if (st[i] != expect) return 0;
    expect *= sz[i];
  }
  return 1;
}

static void setup_acc(rctx *c) {
  static const acc_kind by_op[] = {[MT_SUM] = A_SUM, [MT_PROD] = A_PROD,  [MT_MEAN] = A_SUM,   [MT_MAX] = A_MAX,
                                   [MT_MIN] = A_MIN, [MT_ARGMAX] = A_MAX, [MT_ARGMIN] = A_MIN, [MT_VAR] = A_SUM,
                                   [MT_STD] = A_SUM, [MT_NORM] = A_POW,   [MT_ANY] = A_ANY,    [MT_ALL] = A_ALL};
  _Static_assert(sizeof by_op / sizeof by_op[0] == MT_NUM_REDUCE_OPS, "by_op: one accumulator per reduction");
  c->acc = by_op[c->op];
  c->two_pass = c->op == MT_VAR || c->op == MT_STD;
  if (c->op == MT_NORM) {
    double p = c->p;
    c->acc = p == 0 ? A_NZ : p == 1 ? A_ABS : p == 2 ? A_SQ : p == INFINITY ? A_AMAX : p == -INFINITY ? A_AMIN : A_POW;
  }
  c->oint = (c->isint && (c->op == MT_SUM || c->op == MT_PROD || c->op == MT_MAX || c->op == MT_MIN)) ||
            c->op == MT_ARGMAX || c->op == MT_ARGMIN || c->op == MT_ANY || c->op == MT_ALL;
}

mt_status mt__cpu_reduce(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim, double p,
                         int64_t base) {
  if (mt__numel(out) == 0) return MT_OK;
  if (a->ndim == 0) dim = -1;
  int full = dim < 0;
  rctx c;
  memset(&c, 0, sizeof c);
  c.op = op, c.dt = a->dtype, c.isint = !mt_dtype_is_floating(a->dtype), c.p = p, c.base = base, c.odt = out->dtype;
  setup_acc(&c);

  /* a's dimensions (size-1 ones dropped, the reduced one kept) in decreasing-stride order;
   * a full reduction that reports a flat position keeps the logical order */
  int nd = 0, ord[MT_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++)
    if (a->sizes[d] != 1 || d == dim) ord[nd++] = d;
  if (!(full && (indices || op == MT_ARGMAX || op == MT_ARGMIN))) {
    for (int i = 1; i < nd; i++)
      for (int j = i; j > 0 && a->strides[ord[j]] > a->strides[ord[j - 1]]; j--) {
        int t = ord[j];
        ord[j] = ord[j - 1], ord[j - 1] = t;
      }
  }
  int64_t sz[MT_MAX_DIMS], ast[MT_MAX_DIMS], osz[MT_MAX_DIMS], ost[MT_MAX_DIMS], xst[MT_MAX_DIMS], numel = 1;
  int rpos = -1, ond = 0;
  for (int i = 0; i < nd; i++) {
    int d = ord[i];
    sz[i] = a->sizes[d], ast[i] = a->strides[d], numel *= sz[i];
    if (d == dim) {
      rpos = i;
    } else if (!full) {
      osz[ond] = sz[i], ost[ond] = out->strides[d], xst[ond] = indices ? indices->strides[d] : 0;
      ond++;
    }
  }
  c.outer = 1, c.n = full ? numel : sz[rpos], c.inner = 1;
  if (!full) {
    for (int i = 0; i < rpos; i++) c.outer *= sz[i];
    for (int i = rpos + 1; i < nd; i++) c.inner *= sz[i];
  }

  size_t es = mt__dtype_size(a->dtype), oes = mt__dtype_size(out->dtype);
  char *gathered = NULL, *otmp = NULL;
  int64_t *xtmp = NULL, cst[MT_MAX_DIMS];
  c.a = numel ? mt__data(a) : NULL; /* an empty tensor may have no data at all */
  if (numel > 0 && !dense(nd, sz, ast)) {
    if (!(gathered = malloc((size_t)numel * es)))
      return mt__error(MT_ERR_MEMORY, "reduce: out of host memory for a %lld-element temporary", (long long)numel);
    mt__contiguous_strides(nd, sz, cst);
    copy_strided(es, nd, sz, gathered, cst, c.a, ast);
    c.a = gathered;
  }
  int64_t nout = c.outer * c.inner;
  int odense = full || dense(ond, osz, ost), xdense = !indices || full || dense(ond, osz, xst);
  c.out = odense ? mt__data(out) : (otmp = malloc((size_t)nout * oes));
  c.idx = !indices ? NULL : xdense ? (int64_t *)mt__data(indices) : (xtmp = malloc((size_t)nout * sizeof(int64_t)));
  if (!c.out || (indices && !c.idx)) {
    free(gathered), free(otmp), free(xtmp);
    return mt__error(MT_ERR_MEMORY, "reduce: out of host memory for a %lld-element temporary", (long long)nout);
  }

  mt_status st = MT_OK;
  if (c.inner == 1) reduce_lines(&c);
  else st = reduce_cols(&c);

  mt__contiguous_strides(ond, osz, cst);
  if (st == MT_OK && otmp) copy_strided(oes, ond, osz, mt__data(out), ost, otmp, cst);
  if (st == MT_OK && xtmp) copy_strided(sizeof(int64_t), ond, osz, mt__data(indices), xst, (char *)xtmp, cst);
  free(gathered), free(otmp), free(xtmp);
  return st;
}
