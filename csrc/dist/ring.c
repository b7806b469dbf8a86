/* ring.c: bandwidth-optimal allreduce (Patarasuk & Yuan 2009): a reduce-scatter then an
 * allgather around the ring, rank r sending to r+1 and receiving from r-1. Each rank moves
 * 2(p-1)/p of the message whatever the number of ranks p is.
 *
 * The buffer is cut into p blocks (sizes differ by at most one element) and every block into
 * `chunks` chunks of d->chunk_bytes. Each of the 2(p-1) steps moves one block, chunk by chunk:
 * message m = step * chunks + j carries chunk j. At step t a rank sends block (r - t) mod p and
 * receives block (r - t - 1) mod p (the same formula serves both phases), reducing it while
 * t < p - 1 and storing it after. Send m only depends on receive m - chunks, so chunk j of the
 * next step leaves as soon as it is reduced while later chunks are still on the wire: the
 * steps overlap instead of running in lockstep. Sends and receives are posted in order (MPI
 * keeps their order between two ranks on one tag), at most MT__RING_WIN of each outstanding,
 * receives landing in scratch slots. */
#include <limits.h>
#include "dist.h"

#ifdef MT_WITH_MPI

#define MT__RING_TAG 7301
#define MT__RING_WIN 4 /* chunks in flight per direction; the scratch holds WIN chunks */

/* how the n elements are cut: `ranks` blocks of block_len elements, the first `longer` of them
 * one element more; each block into `chunks` chunks of at most chunk_elems elements (the last
 * ones of a shorter block may be empty) */
typedef struct {
  int64_t block_len, longer, chunk_elems, chunks;
  int ranks, rank;
} ring_shape;

/* element range [*off, *off + *len) of chunk `chunk` of block `block` (len 0 past the end of a
 * shorter block) */
static void chunk_range(const ring_shape *s, int block, int64_t chunk, int64_t *off, int64_t *len) {
  int64_t this_len = s->block_len + (block < s->longer), start = chunk * s->chunk_elems;
  *off = block * s->block_len + (block < s->longer ? block : s->longer) + start;
  *len = this_len - start < 0 ? 0 : this_len - start < s->chunk_elems ? this_len - start : s->chunk_elems;
}

/* flags of the last WIN messages of one direction; *done counts the messages done in order */
static void mark_done(char *flags, int64_t *done, int64_t posted, int64_t m) {
  flags[m % MT__RING_WIN] = 1;
  while (*done < posted && flags[*done % MT__RING_WIN]) flags[(*done)++ % MT__RING_WIN] = 0;
}

/* the block a rank handles at a step: (rank - step - behind) mod ranks (behind 1: the one it
 * receives) */
static int block_at(const ring_shape *s, int64_t step, int behind) {
  return (int)(((s->rank - step - behind) % s->ranks + s->ranks) % s->ranks);
}

/* buf: n elements of dtype, reduced in place with op across the ranks of comm */
mt_status mt__allreduce_ring(mt_dist *d, MPI_Comm comm, void *buf, int64_t n, int dtype, int op) {
  int ranks = 1, rank = 0;
  if (MPI_Comm_size(comm, &ranks) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: ring: not a valid communicator", mt__dist_current(d));
  size_t esize = mt_dtype_size(dtype);
  if (!esize) return mt__error(MT_ERR_DTYPE, "%s: ring: invalid dtype %d", mt__dist_current(d), dtype);
  if (ranks == 1 || n <= 0) return MT_OK;
  ring_shape s = {n / ranks, n % ranks, 0, 0, ranks, rank};
  int64_t longest = s.block_len + (s.longer > 0);
  s.chunk_elems = (d->chunk_bytes > 0 ? d->chunk_bytes : 256 << 10) / (int64_t)esize;
  if (s.chunk_elems > INT_MAX / 2) s.chunk_elems = INT_MAX / 2; /* a count of one MPI call is an int */
  if (s.chunk_elems < 1) s.chunk_elems = 1;
  if (s.chunk_elems > longest) s.chunk_elems = longest; /* small messages need no more scratch than a block */
  s.chunks = (longest + s.chunk_elems - 1) / s.chunk_elems;
  const int64_t messages = 2 * (int64_t)(ranks - 1) * s.chunks; /* each way */
  /* scratch: WIN receive slots of chunk_elems elements */
  char *slots = mt__dist_scratch(d, (size_t)(MT__RING_WIN * s.chunk_elems) * esize);
  if (!slots)
    return mt__error(MT_ERR_MEMORY, "%s: ring: no scratch of %lld bytes", mt__dist_current(d),
                     (long long)(MT__RING_WIN * s.chunk_elems * (int64_t)esize));
  const int64_t slot_bytes = s.chunk_elems * (int64_t)esize;
  MPI_Datatype mpi_type = mt__dist_bytes_type(dtype);
  const int right = (rank + 1) % ranks, left = (rank + ranks - 1) % ranks;
  const int world_right = mt__dist_world_rank(d, comm, right), world_left = mt__dist_world_rank(d, comm, left);

  /* active requests: MPI's array, the peers for wait.c, and which message each one is */
  MPI_Request reqs[2 * MT__RING_WIN];
  int peers[2 * MT__RING_WIN], active = 0;
  int64_t msg[2 * MT__RING_WIN];
  char recv_flags[MT__RING_WIN] = {0}, send_flags[MT__RING_WIN] = {0};
  int64_t recv_posted = 0, recv_done = 0, send_posted = 0, send_done = 0;
  char *data = buf;
  while (recv_done < messages || send_done < messages) {
    for (int progress = 1; progress;) {
      progress = 0;
      /* send m carries what receive m - chunks reduced (or, at step 0, our own block) */
      if (send_posted < messages && send_posted - send_done < MT__RING_WIN &&
          (send_posted < s.chunks || recv_done > send_posted - s.chunks)) {
        int64_t m = send_posted++, off, len;
        chunk_range(&s, block_at(&s, m / s.chunks, 0), m % s.chunks, &off, &len);
        progress = 1;
        if (len == 0) { /* both ends skip the same empty chunks */
          mark_done(send_flags, &send_done, send_posted, m);
        } else {
          if (MPI_Isend(data + off * esize, (int)len, mpi_type, right, MT__RING_TAG, comm, &reqs[active]) !=
              MPI_SUCCESS) {
            mt__dist_cancel(reqs, active);
            return mt__error(MT_ERR_DIST, "%s: ring: MPI_Isend to rank %d failed", mt__dist_current(d), world_right);
          }
          peers[active] = world_right;
          msg[active++] = m;
        }
      }
      /* receive m: a scratch slot in the reduce-scatter; in the allgather it lands in buf,
       * once the send that read that block (m - (ranks - 1) * chunks) is complete */
      int64_t step = recv_posted / s.chunks;
      if (recv_posted < messages && recv_posted - recv_done < MT__RING_WIN &&
          (step < ranks - 1 || send_done > recv_posted - (ranks - 1) * s.chunks)) {
        int64_t m = recv_posted++, off, len;
        chunk_range(&s, block_at(&s, step, 1), m % s.chunks, &off, &len);
        progress = 1;
        if (len == 0) {
          mark_done(recv_flags, &recv_done, recv_posted, m);
        } else {
          char *dst = step < ranks - 1 ? slots + (m % MT__RING_WIN) * slot_bytes : data + off * esize;
          if (MPI_Irecv(dst, (int)len, mpi_type, left, MT__RING_TAG, comm, &reqs[active]) != MPI_SUCCESS) {
            mt__dist_cancel(reqs, active);
            return mt__error(MT_ERR_DIST, "%s: ring: MPI_Irecv from rank %d failed", mt__dist_current(d), world_left);
          }
          peers[active] = world_left;
          msg[active++] = -1 - m; /* negative: a receive */
        }
      }
    }
    if (active == 0) {
      if (recv_done < messages || send_done < messages)
        return mt__error(MT_ERR_INTERNAL, "%s: ring: stalled at message %lld of %lld", mt__dist_current(d),
                         (long long)recv_done, (long long)messages);
      break;
    }
    int idx = -1;
    mt_status st = mt__dist_waitany(d, active, reqs, peers, &idx);
    if (st != MT_OK) return st;
    if (idx < 0 || idx >= active)
      return mt__error(MT_ERR_INTERNAL, "%s: ring: waitany gave no request", mt__dist_current(d));
    int64_t m = msg[idx];
    reqs[idx] = reqs[--active]; /* keep the active requests packed */
    peers[idx] = peers[active];
    msg[idx] = msg[active];
    if (m >= 0) {
      mark_done(send_flags, &send_done, send_posted, m);
    } else {
      m = -1 - m;
      if (m / s.chunks < ranks - 1) { /* reduce-scatter: fold the slot into our block */
        int64_t off, len;
        chunk_range(&s, block_at(&s, m / s.chunks, 1), m % s.chunks, &off, &len);
        mt__dist_reduce(data + off * esize, slots + (m % MT__RING_WIN) * slot_bytes, len, dtype, op);
      }
      mark_done(recv_flags, &recv_done, recv_posted, m);
    }
  }
  return MT_OK;
}

#endif
