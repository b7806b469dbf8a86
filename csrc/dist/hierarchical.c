/* hierarchical.c: binomial-tree reduce and broadcast over point-to-point, and the two-level
 * allreduce of Jia et al. 2018 (Highly Scalable Deep Learning Training System with
 * Mixed-Precision): reduce inside each node to its local rank 0, allreduce among those
 * leaders with the ring, broadcast inside the node. Only the leaders cross the slow links, and
 * the ring among them is 1/local_size as long as a flat one.
 *
 * Both trees are pipelined: the message goes in chunks of d->chunk_bytes with MT__TREE_WIN of
 * them in flight, so a level forwards chunk c while chunk c+1 is still arriving instead of
 * waiting for the whole message (a tree of depth log p then costs about one message time,
 * not log p of them). Children are reduced in a fixed order, so the result does not depend on
 * which message arrived first. */
#include <limits.h>
#include "dist.h"

#ifdef MT_WITH_MPI

#define MT__TREE_TAG_UP 7401
#define MT__TREE_TAG_DOWN 7402
#define MT__TREE_WIN 2    /* chunks in flight per link: double buffering */
#define MT__TREE_MAXCH 32 /* children of a binomial tree node: at most log2(INT_MAX) + 1 */

/* one node of the binomial tree rooted at root: parent (-1 at the root) and children in
 * increasing subtree size, all as ranks of comm; world_parent/world_child the same as world
 * ranks. The message moves in `chunks` chunks of chunk_elems elements of esize bytes. */
typedef struct {
  int ranks, rank, parent, nchildren, child[MT__TREE_MAXCH];
  int world_parent, world_child[MT__TREE_MAXCH];
  int64_t chunk_elems, chunks;
  size_t esize;
  MPI_Datatype mpi_type;
} tree;

static mt_status tree_setup(tree *t, mt_dist *d, MPI_Comm comm, int root, int64_t n, int dtype, const char *what) {
  if (MPI_Comm_size(comm, &t->ranks) != MPI_SUCCESS || MPI_Comm_rank(comm, &t->rank) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: %s: not a valid communicator", mt__dist_current(d), what);
  if (root < 0 || root >= t->ranks)
    return mt__error(MT_ERR_ARG, "%s: %s: root %d is not a rank of %d", mt__dist_current(d), what, root, t->ranks);
  t->esize = mt_dtype_size(dtype);
  if (!t->esize) return mt__error(MT_ERR_DTYPE, "%s: %s: invalid dtype %d", mt__dist_current(d), what, dtype);
  int vrank = (t->rank - root + t->ranks) % t->ranks; /* root relabelled 0 */
  t->parent = -1;
  t->nchildren = 0;
  for (int mask = 1; mask < t->ranks; mask <<= 1) {
    if (vrank & mask) {
      t->parent = (vrank - mask + root) % t->ranks;
      break;
    }
    if (vrank + mask < t->ranks) t->child[t->nchildren++] = (vrank + mask + root) % t->ranks;
    if (mask > INT_MAX / 2) break;
  }
  t->world_parent = t->parent < 0 ? -1 : mt__dist_world_rank(d, comm, t->parent);
  for (int i = 0; i < t->nchildren; i++) t->world_child[i] = mt__dist_world_rank(d, comm, t->child[i]);
  t->chunk_elems = (d->chunk_bytes > 0 ? d->chunk_bytes : 256 << 10) / (int64_t)t->esize;
  if (t->chunk_elems > INT_MAX / 2) t->chunk_elems = INT_MAX / 2;
  if (t->chunk_elems < 1) t->chunk_elems = 1;
  if (t->chunk_elems > n) t->chunk_elems = n;
  t->chunks = n > 0 ? (n + t->chunk_elems - 1) / t->chunk_elems : 0;
  t->mpi_type = mt__dist_bytes_type(dtype);
  return MT_OK;
}

/* elements of chunk c of an n-element message */
static int chunk_len(const tree *t, int64_t n, int64_t c) {
  return (int)(n - c * t->chunk_elems < t->chunk_elems ? n - c * t->chunk_elems : t->chunk_elems);
}

/* buf: n elements of dtype; on return root's holds the reduction over comm (every other rank's
 * holds its subtree's partial one) */
mt_status mt__tree_reduce(mt_dist *d, MPI_Comm comm, int root, void *buf, int64_t n, int dtype, int op) {
  tree t;
  MT_TRY(tree_setup(&t, d, comm, root, n, dtype, "tree reduce"));
  if (t.ranks == 1 || n <= 0) return MT_OK;
  char *base = buf, *slots = NULL;
  size_t slot = (size_t)t.chunk_elems * t.esize; /* scratch: WIN slots per child */
  if (t.nchildren && !(slots = mt__dist_scratch(d, slot * MT__TREE_WIN * (size_t)t.nchildren)))
    return mt__error(MT_ERR_MEMORY, "%s: tree reduce: no scratch of %zu bytes", mt__dist_current(d),
                     slot * MT__TREE_WIN * (size_t)t.nchildren);
  MPI_Request recvs[MT__TREE_WIN][MT__TREE_MAXCH], sends[MT__TREE_WIN];
  for (int w = 0; w < MT__TREE_WIN; w++) {
    sends[w] = MPI_REQUEST_NULL;
    for (int i = 0; i < t.nchildren; i++) recvs[w][i] = MPI_REQUEST_NULL;
  }
  mt_status st = MT_OK;
  const char *fail = NULL;
  /* chunk c's receives from child i land in slot (c % WIN, i) */
  for (int64_t c = 0; c < t.chunks + MT__TREE_WIN && !fail; c++) {
    if (c < t.chunks) /* chunk c's receives go out WIN - 1 chunks before it is folded */
      for (int i = 0; i < t.nchildren && !fail; i++)
        if (MPI_Irecv(slots + (((size_t)(c % MT__TREE_WIN) * t.nchildren + i) * slot), chunk_len(&t, n, c), t.mpi_type,
                      t.child[i], MT__TREE_TAG_UP, comm, &recvs[c % MT__TREE_WIN][i]) != MPI_SUCCESS)
          fail = "MPI_Irecv";
    int64_t ready = c - (MT__TREE_WIN - 1); /* the chunk to fold and forward now */
    if (fail || ready < 0 || ready >= t.chunks) continue;
    int w = (int)(ready % MT__TREE_WIN);
    if (t.nchildren && (st = mt__dist_waitall(d, t.nchildren, recvs[w], t.world_child)) != MT_OK) break;
    for (int i = 0; i < t.nchildren; i++)
      mt__dist_reduce(base + ready * t.chunk_elems * (int64_t)t.esize, slots + ((size_t)w * t.nchildren + i) * slot,
                      chunk_len(&t, n, ready), dtype, op);
    if (t.parent >= 0) {
      /* the send of chunk ready - WIN used this request; it has long been received */
      if (sends[w] != MPI_REQUEST_NULL && (st = mt__dist_waitall(d, 1, &sends[w], &t.world_parent)) != MT_OK) break;
      if (MPI_Isend(base + ready * t.chunk_elems * (int64_t)t.esize, chunk_len(&t, n, ready), t.mpi_type, t.parent,
                    MT__TREE_TAG_UP, comm, &sends[w]) != MPI_SUCCESS)
        fail = "MPI_Isend";
    }
  }
  if (st == MT_OK && !fail && t.parent >= 0) {
    int world_parents[MT__TREE_WIN];
    for (int w = 0; w < MT__TREE_WIN; w++) world_parents[w] = t.world_parent;
    st = mt__dist_waitall(d, MT__TREE_WIN, sends, world_parents);
  }
  if (st != MT_OK || fail) { /* wait.c freed the requests it waited on; the rest go here */
    for (int w = 0; w < MT__TREE_WIN; w++) mt__dist_cancel(recvs[w], t.nchildren);
    mt__dist_cancel(sends, MT__TREE_WIN);
  }
  if (fail) return mt__error(MT_ERR_DIST, "%s: tree reduce: %s failed", mt__dist_current(d), fail);
  return st;
}

/* buf: n elements of dtype; root's is copied into every rank's */
mt_status mt__tree_bcast(mt_dist *d, MPI_Comm comm, int root, void *buf, int64_t n, int dtype) {
  tree t;
  MT_TRY(tree_setup(&t, d, comm, root, n, dtype, "tree broadcast"));
  if (t.ranks == 1 || n <= 0) return MT_OK;
  char *base = buf;
  MPI_Request recvs[MT__TREE_WIN], sends[MT__TREE_WIN][MT__TREE_MAXCH];
  for (int w = 0; w < MT__TREE_WIN; w++) {
    recvs[w] = MPI_REQUEST_NULL;
    for (int i = 0; i < t.nchildren; i++) sends[w][i] = MPI_REQUEST_NULL;
  }
  mt_status st = MT_OK;
  const char *fail = NULL;
  /* chunk c arrives straight into buf, then goes to the children, the largest subtree first */
  for (int64_t c = 0; c < t.chunks + MT__TREE_WIN && !fail; c++) {
    if (t.parent >= 0 && c < t.chunks &&
        MPI_Irecv(base + c * t.chunk_elems * (int64_t)t.esize, chunk_len(&t, n, c), t.mpi_type, t.parent,
                  MT__TREE_TAG_DOWN, comm, &recvs[c % MT__TREE_WIN]) != MPI_SUCCESS) {
      fail = "MPI_Irecv";
      break;
    }
    int64_t ready = c - (MT__TREE_WIN - 1);
    if (ready < 0 || ready >= t.chunks) continue;
    int w = (int)(ready % MT__TREE_WIN);
    if (t.parent >= 0 && (st = mt__dist_waitall(d, 1, &recvs[w], &t.world_parent)) != MT_OK) break;
    /* the sends of chunk ready - WIN used these requests */
    if (t.nchildren && (st = mt__dist_waitall(d, t.nchildren, sends[w], t.world_child)) != MT_OK) break;
    for (int i = t.nchildren - 1; i >= 0 && !fail; i--)
      if (MPI_Isend(base + ready * t.chunk_elems * (int64_t)t.esize, chunk_len(&t, n, ready), t.mpi_type, t.child[i],
                    MT__TREE_TAG_DOWN, comm, &sends[w][i]) != MPI_SUCCESS)
        fail = "MPI_Isend";
  }
  for (int w = 0; w < MT__TREE_WIN && st == MT_OK && !fail && t.nchildren; w++)
    st = mt__dist_waitall(d, t.nchildren, sends[w], t.world_child);
  if (st != MT_OK || fail) {
    mt__dist_cancel(recvs, MT__TREE_WIN);
    for (int w = 0; w < MT__TREE_WIN; w++) mt__dist_cancel(sends[w], t.nchildren);
  }
  if (fail) return mt__error(MT_ERR_DIST, "%s: tree broadcast: %s failed", mt__dist_current(d), fail);
  return st;
}

/* buf: n elements of dtype, reduced in place with op across every rank */
mt_status mt__allreduce_hierarchical(mt_dist *d, void *buf, int64_t n, int dtype, int op) {
  if (n <= 0) return MT_OK;
  int local_size = 1;
  if (d->local != MPI_COMM_NULL && MPI_Comm_size(d->local, &local_size) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: hierarchical: the node communicator is not valid", mt__dist_current(d));
  if (local_size > 1) MT_TRY(mt__tree_reduce(d, d->local, 0, buf, n, dtype, op));
  /* local rank 0 of every node, and only those, hold d->leaders */
  if (d->leaders != MPI_COMM_NULL) MT_TRY(mt__allreduce_ring(d, d->leaders, buf, n, dtype, op));
  if (local_size > 1) MT_TRY(mt__tree_bcast(d, d->local, 0, buf, n, dtype));
  return MT_OK;
}

#endif
