/* ring.c: bandwidth-optimal allreduce (Patarasuk & Yuan 2009): a reduce-scatter then an
 * allgather around the ring, rank r sending to r+1 and receiving from r-1. Each rank moves
 * 2(p-1)/p of the message whatever p is.
 *
 * The buffer is cut into p blocks (sizes differ by at most one element) and every block into
 * sub-chunks of d->chunk_bytes. Message m = t*K + j of the 2(p-1) steps t carries sub-chunk j:
 * at step t a rank sends block (r - t) mod p and receives block (r - t - 1) mod p (the same
 * formula serves both phases), reducing it while t < p - 1 and storing it after. Send m only
 * depends on receive m - K, so sub-chunk j of the next step leaves as soon as it is reduced
 * while later sub-chunks are still on the wire: the steps overlap instead of running in
 * lockstep. Sends and receives are posted in order (MPI keeps their order between two ranks
 * on one tag), at most MT__RING_WIN of each outstanding, receives landing in scratch slots. */
#include <limits.h>
#include "dist.h"

#ifdef MT_WITH_MPI

#define MT__RING_TAG 7301
#define MT__RING_WIN 4 /* sub-chunks in flight per direction; scratch is WIN sub-chunks */

typedef struct {
  int64_t q, extra, C, K; /* block = q or q + 1 elements (first `extra` blocks); sub-chunks */
  int p, r;
} ring_shape;

/* element range of sub-chunk j of block b (len 0 when the block is shorter) */
static void sub_range(const ring_shape *s, int b, int64_t j, int64_t *off, int64_t *len) {
  int64_t blen = s->q + (b < s->extra), lo = j * s->C;
  *off = b * s->q + (b < s->extra ? b : s->extra) + lo;
  *len = blen - lo < 0 ? 0 : blen - lo < s->C ? blen - lo : s->C;
}

/* done flags of the last WIN messages; *fin counts the messages done in order */
static void mark_done(char *done, int64_t *fin, int64_t post, int64_t m) {
  done[m % MT__RING_WIN] = 1;
  while (*fin < post && done[*fin % MT__RING_WIN]) done[(*fin)++ % MT__RING_WIN] = 0;
}

mt_status mt__allreduce_ring(mt_dist *d, MPI_Comm comm, void *buf, int64_t n, int dtype, int op) {
  int p = 1, r = 0;
  if (MPI_Comm_size(comm, &p) != MPI_SUCCESS || MPI_Comm_rank(comm, &r) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: ring: not a valid communicator", mt__dist_current(d));
  size_t es = mt_dtype_size(dtype);
  if (!es) return mt__error(MT_ERR_DTYPE, "%s: ring: invalid dtype %d", mt__dist_current(d), dtype);
  if (p == 1 || n <= 0) return MT_OK;
  ring_shape s = {n / p, n % p, 0, 0, p, r};
  int64_t bmax = s.q + (s.extra > 0);
  s.C = (d->chunk_bytes > 0 ? d->chunk_bytes : 256 << 10) / (int64_t)es;
  if (s.C > INT_MAX / 2) s.C = INT_MAX / 2; /* a count of one MPI call is an int */
  if (s.C < 1) s.C = 1;
  if (s.C > bmax) s.C = bmax; /* small messages need no more scratch than a block */
  s.K = (bmax + s.C - 1) / s.C;
  const int64_t M = 2 * (int64_t)(p - 1) * s.K; /* messages each way */
  char *scr = mt__dist_scratch(d, (size_t)(MT__RING_WIN * s.C) * es);
  if (!scr)
    return mt__error(MT_ERR_MEMORY, "%s: ring: no scratch of %lld bytes", mt__dist_current(d),
                     (long long)(MT__RING_WIN * s.C * (int64_t)es));
  MPI_Datatype ty = mt__dist_bytes_type(dtype);
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  const int wright = mt__dist_world_rank(d, comm, right), wleft = mt__dist_world_rank(d, comm, left);

  /* active requests: MPI's array, the peers for wait.c, and which message each one is */
  MPI_Request reqs[2 * MT__RING_WIN];
  int peers[2 * MT__RING_WIN], na = 0;
  int64_t msg[2 * MT__RING_WIN];
  char rdone[MT__RING_WIN] = {0}, sdone[MT__RING_WIN] = {0};
  int64_t rpost = 0, rfin = 0, spost = 0, sfin = 0;
  char *base = buf;
  while (rfin < M || sfin < M) {
    for (int progress = 1; progress;) {
      progress = 0;
      /* send m carries what receive m - K reduced (or, at step 0, our own block) */
      if (spost < M && spost - sfin < MT__RING_WIN && (spost < s.K || rfin > spost - s.K)) {
        int64_t m = spost++, off, len;
        sub_range(&s, (int)(((r - m / s.K) % p + p) % p), m % s.K, &off, &len);
        progress = 1;
        if (len == 0) { /* both ends skip the same empty sub-chunks */
          mark_done(sdone, &sfin, spost, m);
        } else {
          if (MPI_Isend(base + off * es, (int)len, ty, right, MT__RING_TAG, comm, &reqs[na]) != MPI_SUCCESS) {
            mt__dist_cancel(reqs, na);
            return mt__error(MT_ERR_DIST, "%s: ring: MPI_Isend to rank %d failed", mt__dist_current(d), wright);
          }
          peers[na] = wright;
          msg[na++] = m;
        }
      }
      /* receive m: a scratch slot in the reduce-scatter; in the allgather it lands in buf,
       * once the send that read that block (m - (p-1)K) is complete */
      int64_t t = rpost / s.K;
      if (rpost < M && rpost - rfin < MT__RING_WIN && (t < p - 1 || sfin > rpost - (p - 1) * s.K)) {
        int64_t m = rpost++, off, len;
        sub_range(&s, (int)(((r - t - 1) % p + p) % p), m % s.K, &off, &len);
        progress = 1;
        if (len == 0) {
          mark_done(rdone, &rfin, rpost, m);
        } else {
          char *dst = t < p - 1 ? scr + (m % MT__RING_WIN) * s.C * (int64_t)es : base + off * es;
          if (MPI_Irecv(dst, (int)len, ty, left, MT__RING_TAG, comm, &reqs[na]) != MPI_SUCCESS) {
            mt__dist_cancel(reqs, na);
            return mt__error(MT_ERR_DIST, "%s: ring: MPI_Irecv from rank %d failed", mt__dist_current(d), wleft);
          }
          peers[na] = wleft;
          msg[na++] = -1 - m; /* negative: a receive */
        }
      }
    }
    if (na == 0) {
      if (rfin < M || sfin < M)
        return mt__error(MT_ERR_INTERNAL, "%s: ring: stalled at message %lld of %lld", mt__dist_current(d),
                         (long long)rfin, (long long)M);
      break;
    }
    int idx = -1;
    mt_status st = mt__dist_waitany(d, na, reqs, peers, &idx);
    if (st != MT_OK) return st;
    if (idx < 0 || idx >= na)
      return mt__error(MT_ERR_INTERNAL, "%s: ring: waitany gave no request", mt__dist_current(d));
    int64_t m = msg[idx];
    reqs[idx] = reqs[--na]; /* keep the active requests packed */
    peers[idx] = peers[na];
    msg[idx] = msg[na];
    if (m >= 0) {
      mark_done(sdone, &sfin, spost, m);
    } else {
      m = -1 - m;
      if (m / s.K < p - 1) { /* reduce-scatter: fold the slot into our block */
        int64_t off, len;
        sub_range(&s, (int)(((r - m / s.K - 1) % p + p) % p), m % s.K, &off, &len);
        mt__dist_reduce(base + off * es, scr + (m % MT__RING_WIN) * s.C * (int64_t)es, len, dtype, op);
      }
      mark_done(rdone, &rfin, rpost, m);
    }
  }
  return MT_OK;
}

#endif
