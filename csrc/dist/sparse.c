/* sparse.c: the sparse allreduce (mt_dist_sparse_allreduce). Each rank holds (index, value)
 * pairs, the selection of a top-k compressor; every rank ends with their dense sum.
 *
 * allgather: every rank receives every rank's pairs and sums them in rank order. A rank
 * receives (N - 1) k pairs, linear in the rank count N.
 *
 * hierarchical (the exchange of issue 35, after the two-level allreduce of hierarchical.c):
 *   1. inside each node the pairs are gathered to the leader (local rank 0), which sums them
 *      and keeps one pair per index: what the node's ranks selected in common travels once;
 *   2. the leaders allgather their merged sets, or, when the sets together would move more
 *      bytes than a ring allreduce of the dense vector, run that ring instead (the choice is
 *      made from counts every leader has, so all choose alike);
 *   3. each leader broadcasts the sum inside its node: as pairs (one per index of the union) or,
 *      when that is larger, as the dense vector.
 * A leader receives (L - 1) k pairs from its node and at most min(merged pairs, a dense ring)
 * from the other leaders; every other rank receives at most min(union, dense vector). Bytes per
 * rank are bounded by the dense sizes whatever N is, and fall below N k as soon as the ranks'
 * selections overlap.
 *
 * Pairs travel as 8 bytes (int32 index, float32 value). The sums are in a fixed order (rank
 * order inside a node, then node order), so every rank ends with the same bits; the two
 * algorithms add in different orders and may differ in the last bits. Buffers are allocated
 * per call: the pairs are few (a density of 1e-3), and the counts are known only in the call. */
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include "queue.h"

typedef struct {
  int32_t index;
  float value;
} pair;
_Static_assert(sizeof(pair) == 8, "a pair is 8 bytes on the wire");

#define NAME_ROW(E, NAME, ...) NAME,
static const char *const names[] = {MT_DIST_SPARSE_ALGS(NAME_ROW, ~)};
_Static_assert(sizeof names / sizeof names[0] == MT_NUM_SPARSE_ALG, "one name per sparse algorithm");

const char *mt_dist_sparse_alg_name(int alg) { return (alg >= 0 && alg < MT_NUM_SPARSE_ALG) ? names[alg] : NULL; }

/* ---- checks, in the caller ---- */
static mt_status check_cpu(const char *what, const mt_tensor *t, int dtype) {
  const char *op = "dist.sparseAllreduce";
  if (!t) return mt__error(MT_ERR_ARG, "%s: %s is NULL", op, what);
  if (mt_tensor_dtype(t) != dtype)
    return mt__error(MT_ERR_DTYPE, "%s: %s must be %s, got %s", op, what, mt_dtype_name(dtype),
                     mt_dtype_name(mt_tensor_dtype(t)));
  if (mt_tensor_device(t) != -1)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on device %d; the sparse exchange takes CPU tensors", op, what,
                     mt_tensor_device(t));
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_ARG, "%s: %s must be contiguous", op, what);
  return MT_OK;
}

mt_status mt_dist_sparse_allreduce(mt_dist *d, mt_tensor *out, mt_tensor *idx, mt_tensor *val, int op, int alg,
                                   mt_dist_work **work) {
  const char *name = "dist.sparseAllreduce";
  MT_TRY(check_cpu("out", out, MT_F32));
  MT_TRY(check_cpu("idx", idx, MT_I32));
  MT_TRY(check_cpu("val", val, MT_F32));
  if (op != MT_RED_SUM && op != MT_RED_AVG)
    return mt__error(MT_ERR_ARG, "%s: op must be sum or avg, got %s", name,
                     mt_dist_red_name(op) ? mt_dist_red_name(op) : "an unknown op");
  if (!mt_dist_sparse_alg_name(alg))
    return mt__error(MT_ERR_ARG, "%s: unknown algorithm %d (ids 0..%d)", name, alg, MT_NUM_SPARSE_ALG - 1);
  int64_t n = mt_tensor_numel(out), k = mt_tensor_numel(idx);
  if (mt_tensor_numel(val) != k)
    return mt__error(MT_ERR_SHAPE, "%s: idx has %lld elements but val %lld", name, (long long)k,
                     (long long)mt_tensor_numel(val));
  if (n > INT32_MAX)
    return mt__error(MT_ERR_SHAPE, "%s: out has %lld elements, more than int32 indices reach", name, (long long)n);
  if (k > INT_MAX / (int64_t)sizeof(pair))
    return mt__error(MT_ERR_SHAPE, "%s: %lld pairs are more than one MPI message carries", name, (long long)k);
  const int32_t *ix = mt_tensor_data(idx);
  for (int64_t i = 0; i < k; i++) /* checked here: a bad index on the thread would leave peers waiting */
    if (ix[i] < -1 || ix[i] >= n)
      return mt__error(MT_ERR_ARG, "%s: idx[%lld] = %d is outside out's %lld elements (-1 marks padding)", name,
                       (long long)i, ix[i], (long long)n);
  mt_dist_work *w = NULL;
  MT_TRY(mt__dist_new_work(d, "sparseAllreduce", MT_WORK_SPARSE, &w));
  w->a = out;
  w->b = val;
  w->c = idx;
  w->op = op;
  w->alg = alg;
  return mt__dist_submit(d, w, work);
}

/* ---- on the communication thread ---- */
static void scatter_add(float *out, const pair *p, int64_t count) {
  for (int64_t i = 0; i < count; i++) out[p[i].index] += p[i].value;
}

#ifdef MT_WITH_MPI
/* The pairs of out at the indices of `in`, one per index (the first time it appears), into dst;
 * an index whose sum is exactly zero is left out (the receiver's zero is the same). out is
 * unchanged on return. Returns the count. */
static int64_t merge(float *out, const pair *in, int64_t count, pair *dst) {
  int64_t m = 0;
  for (int64_t i = 0; i < count; i++) {
    int32_t j = in[i].index;
    if (out[j] == 0.0f) continue; /* zero, or already taken (see below) */
    dst[m].index = j;
    dst[m++].value = out[j];
    out[j] = 0.0f; /* marks it taken */
  }
  for (int64_t i = 0; i < m; i++) out[dst[i].index] = dst[i].value;
  return m;
}

/* byte counts and displacements of `ranks` blocks of counts[r] pairs; the total pairs */
static int64_t layout(const int *counts, int ranks, int *bytes, int *displs) {
  int64_t total = 0;
  for (int r = 0; r < ranks; r++) {
    bytes[r] = counts[r] * (int)sizeof(pair);
    displs[r] = (int)(total * (int64_t)sizeof(pair));
    total += counts[r];
  }
  return total;
}

static mt_status too_many(mt_dist *d, int64_t total) {
  return mt__error(MT_ERR_SHAPE, "dist: %s: %lld pairs together are more than one MPI message carries",
                   mt__dist_current(d), (long long)total);
}

/* every rank's pairs to every rank: *all (malloc'd, caller frees), *total of them. known: every
 * rank's count when the caller has exchanged them already, or NULL */
static mt_status allgather_pairs(mt_dist *d, MPI_Comm comm, const pair *mine, int count, const int *known, pair **all,
                                 int64_t *total, int64_t *recv) {
  int ranks = 0;
  MPI_Comm_size(comm, &ranks);
  int *buf = malloc(sizeof(int) * 3 * (size_t)ranks);
  if (!buf) return mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  int *counts = buf, *bytes = buf + ranks, *displs = buf + 2 * ranks;
  MPI_Request r = MPI_REQUEST_NULL;
  mt_status st = MT_OK;
  if (known) {
    memcpy(counts, known, sizeof(int) * (size_t)ranks);
  } else {
    st = mt__dist_wait1(d, &r, MPI_Iallgather(&count, 1, MPI_INT, counts, 1, MPI_INT, comm, &r));
    *recv += (int64_t)(ranks - 1) * (int64_t)sizeof(int);
  }
  int64_t t = st == MT_OK ? layout(counts, ranks, bytes, displs) : 0;
  if (st == MT_OK && t > INT_MAX / (int64_t)sizeof(pair)) st = too_many(d, t);
  pair *got = st == MT_OK ? malloc(sizeof(pair) * (size_t)(t > 0 ? t : 1)) : NULL;
  if (st == MT_OK && !got) st = mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  if (st == MT_OK)
    st = mt__dist_wait1(
        d, &r, MPI_Iallgatherv(mine, count * (int)sizeof(pair), MPI_BYTE, got, bytes, displs, MPI_BYTE, comm, &r));
  free(buf);
  if (st != MT_OK) {
    free(got);
    return st;
  }
  *all = got;
  *total = t;
  *recv += (t - count) * (int64_t)sizeof(pair);
  return MT_OK;
}

static mt_status flat(mt_dist *d, float *out, int64_t n, const pair *mine, int count, int64_t *stats) {
  pair *all = NULL;
  int64_t total = 0;
  MT_TRY(allgather_pairs(d, d->world, mine, count, NULL, &all, &total, &stats[0]));
  memset(out, 0, sizeof(float) * (size_t)n);
  scatter_add(out, all, total);
  free(all);
  stats[1] = total;
  return MT_OK;
}

/* step 1: the node's pairs at its leader (local rank 0), summed into out there and merged;
 * *merged (malloc'd) and *count on the leader, nothing elsewhere */
static mt_status node_gather(mt_dist *d, float *out, int64_t n, const pair *mine, int count, pair **merged,
                             int64_t *mcount, int64_t *recv) {
  int L = d->local_size, leader = d->local_rank == 0;
  int *buf = malloc(sizeof(int) * 3 * (size_t)L);
  if (!buf) return mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  int *counts = buf, *bytes = buf + L, *displs = buf + 2 * L;
  MPI_Request r = MPI_REQUEST_NULL;
  mt_status st = mt__dist_wait1(d, &r, MPI_Igather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, d->local, &r));
  int64_t total = st == MT_OK && leader ? layout(counts, L, bytes, displs) : 0;
  if (st == MT_OK && total > INT_MAX / (int64_t)sizeof(pair)) st = too_many(d, total);
  pair *got = NULL, *m = NULL;
  if (st == MT_OK && leader) {
    got = malloc(sizeof(pair) * (size_t)(total > 0 ? total : 1));
    m = malloc(sizeof(pair) * (size_t)(total > 0 ? total : 1));
    if (!got || !m) st = mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  }
  if (st == MT_OK)
    st = mt__dist_wait1(
        d, &r, MPI_Igatherv(mine, count * (int)sizeof(pair), MPI_BYTE, got, bytes, displs, MPI_BYTE, 0, d->local, &r));
  free(buf);
  if (st == MT_OK && leader) {
    memset(out, 0, sizeof(float) * (size_t)n);
    scatter_add(out, got, total);
    *mcount = merge(out, got, total, m);
    *merged = m;
    *recv += (int64_t)(L - 1) * (int64_t)sizeof(int) + (total - count) * (int64_t)sizeof(pair);
    m = NULL;
  }
  free(got);
  free(m);
  return st;
}

/* step 2, on the leaders: out (the node's sum) becomes the global sum; *merged the union when
 * it stayed sparse (*mcount = -1 when it went dense) */
static mt_status leaders_exchange(mt_dist *d, float *out, int64_t n, pair **merged, int64_t *mcount, int64_t *stats) {
  int M = d->nodes;
  if (M == 1) {
    stats[1] = *mcount;
    return MT_OK;
  }
  if (*mcount > INT_MAX / (int64_t)sizeof(pair)) return too_many(d, *mcount);
  /* the merged counts of every node decide, alike on every leader */
  int mine = (int)*mcount, *counts = malloc(sizeof(int) * (size_t)M);
  if (!counts) return mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  MPI_Request r = MPI_REQUEST_NULL;
  mt_status st = mt__dist_wait1(d, &r, MPI_Iallgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, d->leaders, &r));
  int64_t sum = 0;
  for (int q = 0; q < M; q++) sum += counts[q];
  if (st != MT_OK) {
    free(counts);
    return st;
  }
  stats[0] += (int64_t)(M - 1) * (int64_t)sizeof(int);
  double dense_bytes = 2.0 * (M - 1) / M * (double)n * sizeof(float);
  if ((double)sum * sizeof(pair) >= dense_bytes) {
    free(counts);
    MT_TRY(mt__allreduce_ring(d, d->leaders, out, n, MT_F32, MT_RED_SUM));
    stats[0] += (int64_t)dense_bytes;
    stats[1] = -1;
    free(*merged);
    *merged = NULL;
    *mcount = -1;
    return MT_OK;
  }
  pair *all = NULL;
  int64_t total = 0;
  st = allgather_pairs(d, d->leaders, *merged, mine, counts, &all, &total, &stats[0]);
  free(counts);
  MT_TRY(st);
  memset(out, 0, sizeof(float) * (size_t)n);
  scatter_add(out, all, total); /* node order: every leader adds alike */
  pair *u = realloc(*merged, sizeof(pair) * (size_t)(total > 0 ? total : 1));
  if (!u) {
    free(all);
    return mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  }
  *merged = u;
  *mcount = merge(out, all, total, u);
  free(all);
  stats[1] = total;
  return MT_OK;
}

/* step 3: the leader's sum to the rest of its node, as pairs or dense, whichever is smaller */
static mt_status node_broadcast(mt_dist *d, float *out, int64_t n, const pair *merged, int64_t mcount, int64_t *stats) {
  int leader = d->local_rank == 0;
  int64_t head[2] = {0, 0}; /* form (1: dense), pairs */
  if (leader) {
    int dense = mcount < 0 || mcount * (int64_t)sizeof(pair) >= n * (int64_t)sizeof(float);
    head[0] = dense;
    head[1] = dense ? 0 : mcount;
  }
  MPI_Request r = MPI_REQUEST_NULL;
  MT_TRY(mt__dist_wait1(d, &r, MPI_Ibcast(head, 2, MPI_INT64_T, 0, d->local, &r)));
  if (head[0]) {
    MT_TRY(mt__dist_wait1(d, &r, MPI_Ibcast(out, (int)n, MPI_FLOAT, 0, d->local, &r)));
    if (!leader) {
      stats[0] += (int64_t)sizeof head + n * (int64_t)sizeof(float);
      stats[1] = -1;
    }
    return MT_OK;
  }
  int64_t u = head[1];
  if (u > INT_MAX / (int64_t)sizeof(pair)) return too_many(d, u);
  pair *p = leader ? (pair *)merged : malloc(sizeof(pair) * (size_t)(u > 0 ? u : 1));
  if (!p) return mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  mt_status st = mt__dist_wait1(d, &r, MPI_Ibcast(p, (int)(u * (int64_t)sizeof(pair)), MPI_BYTE, 0, d->local, &r));
  if (st == MT_OK && !leader) {
    memset(out, 0, sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < u; i++) out[p[i].index] = p[i].value; /* one pair per index */
    stats[0] += (int64_t)sizeof head + u * (int64_t)sizeof(pair);
    stats[1] = u;
  }
  if (!leader) free(p);
  return st;
}

static mt_status hierarchical(mt_dist *d, float *out, int64_t n, const pair *mine, int count, int64_t *stats) {
  pair *merged = NULL;
  int64_t mcount = 0;
  mt_status st = node_gather(d, out, n, mine, count, &merged, &mcount, &stats[0]);
  if (st == MT_OK && d->local_rank == 0) st = leaders_exchange(d, out, n, &merged, &mcount, stats);
  if (st == MT_OK && d->local_size > 1) st = node_broadcast(d, out, n, merged, mcount, stats);
  free(merged);
  return st;
}
#endif

mt_status mt__dist_run_sparse(mt_dist *d, mt_dist_work *w) {
  float *out = mt_tensor_data(w->a);
  const float *val = mt_tensor_data(w->b);
  const int32_t *idx = mt_tensor_data(w->c);
  int64_t n = mt_tensor_numel(w->a), k = mt_tensor_numel(w->c);
  int64_t stats[2] = {0, 0};
  pair *mine = malloc(sizeof(pair) * (size_t)(k > 0 ? k : 1));
  if (!mine) return mt__error(MT_ERR_MEMORY, "dist: %s: out of memory", mt__dist_current(d));
  int count = 0; /* the pairs that are not padding */
  for (int64_t i = 0; i < k; i++) {
    if (idx[i] < 0) continue;
    mine[count].index = idx[i];
    mine[count++].value = val[i];
  }
  mt_status st = MT_OK;
  if (d->size == 1) {
    memset(out, 0, sizeof(float) * (size_t)n);
    scatter_add(out, mine, count);
    stats[1] = count;
  } else {
#ifdef MT_WITH_MPI
    st = w->alg == MT_SPARSE_HIERARCHICAL ? hierarchical(d, out, n, mine, count, stats)
                                          : flat(d, out, n, mine, count, stats);
#else
    st = mt__error(MT_ERR_INTERNAL, "dist: %d ranks without MPI", d->size);
#endif
  }
  free(mine);
  if (st != MT_OK) return st;
  if (w->op == MT_RED_AVG) mt__dist_scale_avg(out, n, MT_F32, d->size);
  memcpy(w->counters, stats, sizeof stats);
  return MT_OK;
}
