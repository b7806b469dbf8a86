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
 * increasing subtree size, all as ranks of comm; wparent/wchild the same as world ranks */
typedef struct {
  int p, r, parent, nch, child[MT__TREE_MAXCH];
  int wparent, wchild[MT__TREE_MAXCH];
  int64_t C, K; /* chunk elements, chunks */
  size_t es;
  MPI_Datatype ty;
} tree;

static mt_status tree_setup(tree *t, mt_dist *d, MPI_Comm comm, int root, int64_t n, int dtype, const char *what) {
  if (MPI_Comm_size(comm, &t->p) != MPI_SUCCESS || MPI_Comm_rank(comm, &t->r) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: %s: not a valid communicator", mt__dist_current(d), what);
  if (root < 0 || root >= t->p)
    return mt__error(MT_ERR_ARG, "%s: %s: root %d is not a rank of %d", mt__dist_current(d), what, root, t->p);
  t->es = mt_dtype_size(dtype);
  if (!t->es) return mt__error(MT_ERR_DTYPE, "%s: %s: invalid dtype %d", mt__dist_current(d), what, dtype);
  int v = (t->r - root + t->p) % t->p;
  t->parent = -1;
  t->nch = 0;
  for (int mask = 1; mask < t->p; mask <<= 1) {
    if (v & mask) {
      t->parent = (v - mask + root) % t->p;
      break;
    }
    if (v + mask < t->p) t->child[t->nch++] = (v + mask + root) % t->p;
    if (mask > INT_MAX / 2) break;
  }
  t->wparent = t->parent < 0 ? -1 : mt__dist_world_rank(d, comm, t->parent);
  for (int i = 0; i < t->nch; i++) t->wchild[i] = mt__dist_world_rank(d, comm, t->child[i]);
  t->C = (d->chunk_bytes > 0 ? d->chunk_bytes : 256 << 10) / (int64_t)t->es;
  if (t->C > INT_MAX / 2) t->C = INT_MAX / 2;
  if (t->C < 1) t->C = 1;
  if (t->C > n) t->C = n;
  t->K = n > 0 ? (n + t->C - 1) / t->C : 0;
  t->ty = mt__dist_bytes_type(dtype);
  return MT_OK;
}

static int chunk_len(const tree *t, int64_t n, int64_t c) { return (int)(n - c * t->C < t->C ? n - c * t->C : t->C); }

mt_status mt__tree_reduce(mt_dist *d, MPI_Comm comm, int root, void *buf, int64_t n, int dtype, int op) {
  tree t;
  MT_TRY(tree_setup(&t, d, comm, root, n, dtype, "tree reduce"));
  if (t.p == 1 || n <= 0) return MT_OK;
  char *base = buf, *scr = NULL;
  size_t slot = (size_t)t.C * t.es; /* scratch: WIN slots per child */
  if (t.nch && !(scr = mt__dist_scratch(d, slot * MT__TREE_WIN * (size_t)t.nch)))
    return mt__error(MT_ERR_MEMORY, "%s: tree reduce: no scratch of %zu bytes", mt__dist_current(d),
                     slot * MT__TREE_WIN * (size_t)t.nch);
  MPI_Request rreq[MT__TREE_WIN][MT__TREE_MAXCH], sreq[MT__TREE_WIN];
  for (int w = 0; w < MT__TREE_WIN; w++) {
    sreq[w] = MPI_REQUEST_NULL;
    for (int i = 0; i < t.nch; i++) rreq[w][i] = MPI_REQUEST_NULL;
  }
  mt_status st = MT_OK;
  const char *fail = NULL;
  /* chunk c's receives from child i land in slot (c % WIN, i) */
  for (int64_t c = 0; c < t.K + MT__TREE_WIN && !fail; c++) {
    if (c < t.K) /* chunk c's receives go out WIN - 1 chunks before it is folded */
      for (int i = 0; i < t.nch && !fail; i++)
        if (MPI_Irecv(scr + (((size_t)(c % MT__TREE_WIN) * t.nch + i) * slot), chunk_len(&t, n, c), t.ty, t.child[i],
                      MT__TREE_TAG_UP, comm, &rreq[c % MT__TREE_WIN][i]) != MPI_SUCCESS)
          fail = "MPI_Irecv";
    int64_t fc = c - (MT__TREE_WIN - 1); /* the chunk to fold and forward now */
    if (fail || fc < 0 || fc >= t.K) continue;
    int w = (int)(fc % MT__TREE_WIN);
    if (t.nch && (st = mt__dist_waitall(d, t.nch, rreq[w], t.wchild)) != MT_OK) break;
    for (int i = 0; i < t.nch; i++)
      mt__dist_reduce(base + fc * t.C * (int64_t)t.es, scr + ((size_t)w * t.nch + i) * slot, chunk_len(&t, n, fc),
                      dtype, op);
    if (t.parent >= 0) {
      /* the send of chunk fc - WIN used this request; it has long been received */
      if (sreq[w] != MPI_REQUEST_NULL && (st = mt__dist_waitall(d, 1, &sreq[w], &t.wparent)) != MT_OK) break;
      if (MPI_Isend(base + fc * t.C * (int64_t)t.es, chunk_len(&t, n, fc), t.ty, t.parent, MT__TREE_TAG_UP, comm,
                    &sreq[w]) != MPI_SUCCESS)
        fail = "MPI_Isend";
    }
  }
  if (st == MT_OK && !fail && t.parent >= 0) {
    int wp[MT__TREE_WIN];
    for (int w = 0; w < MT__TREE_WIN; w++) wp[w] = t.wparent;
    st = mt__dist_waitall(d, MT__TREE_WIN, sreq, wp);
  }
  if (st != MT_OK || fail) { /* wait.c freed the requests it waited on; the rest go here */
    for (int w = 0; w < MT__TREE_WIN; w++) mt__dist_cancel(rreq[w], t.nch);
    mt__dist_cancel(sreq, MT__TREE_WIN);
  }
  if (fail) return mt__error(MT_ERR_DIST, "%s: tree reduce: %s failed", mt__dist_current(d), fail);
  return st;
}

mt_status mt__tree_bcast(mt_dist *d, MPI_Comm comm, int root, void *buf, int64_t n, int dtype) {
  tree t;
  MT_TRY(tree_setup(&t, d, comm, root, n, dtype, "tree broadcast"));
  if (t.p == 1 || n <= 0) return MT_OK;
  char *base = buf;
  MPI_Request rreq[MT__TREE_WIN], sreq[MT__TREE_WIN][MT__TREE_MAXCH];
  for (int w = 0; w < MT__TREE_WIN; w++) {
    rreq[w] = MPI_REQUEST_NULL;
    for (int i = 0; i < t.nch; i++) sreq[w][i] = MPI_REQUEST_NULL;
  }
  mt_status st = MT_OK;
  const char *fail = NULL;
  /* chunk c arrives straight into buf, then goes to the children, the largest subtree first */
  for (int64_t c = 0; c < t.K + MT__TREE_WIN && !fail; c++) {
    if (t.parent >= 0 && c < t.K &&
        MPI_Irecv(base + c * t.C * (int64_t)t.es, chunk_len(&t, n, c), t.ty, t.parent, MT__TREE_TAG_DOWN, comm,
                  &rreq[c % MT__TREE_WIN]) != MPI_SUCCESS) {
      fail = "MPI_Irecv";
      break;
    }
    int64_t fc = c - (MT__TREE_WIN - 1);
    if (fc < 0 || fc >= t.K) continue;
    int w = (int)(fc % MT__TREE_WIN);
    if (t.parent >= 0 && (st = mt__dist_waitall(d, 1, &rreq[w], &t.wparent)) != MT_OK) break;
    if (t.nch && (st = mt__dist_waitall(d, t.nch, sreq[w], t.wchild)) != MT_OK) break; /* chunk fc - WIN */
    for (int i = t.nch - 1; i >= 0 && !fail; i--)
      if (MPI_Isend(base + fc * t.C * (int64_t)t.es, chunk_len(&t, n, fc), t.ty, t.child[i], MT__TREE_TAG_DOWN, comm,
                    &sreq[w][i]) != MPI_SUCCESS)
        fail = "MPI_Isend";
  }
  for (int w = 0; w < MT__TREE_WIN && st == MT_OK && !fail && t.nch; w++)
    st = mt__dist_waitall(d, t.nch, sreq[w], t.wchild);
  if (st != MT_OK || fail) {
    mt__dist_cancel(rreq, MT__TREE_WIN);
    for (int w = 0; w < MT__TREE_WIN; w++) mt__dist_cancel(sreq[w], t.nch);
  }
  if (fail) return mt__error(MT_ERR_DIST, "%s: tree broadcast: %s failed", mt__dist_current(d), fail);
  return st;
}

mt_status mt__allreduce_hierarchical(mt_dist *d, void *buf, int64_t n, int dtype, int op) {
  if (n <= 0) return MT_OK;
  int ls = 1;
  if (d->local != MPI_COMM_NULL && MPI_Comm_size(d->local, &ls) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: hierarchical: the node communicator is not valid", mt__dist_current(d));
  if (ls > 1) MT_TRY(mt__tree_reduce(d, d->local, 0, buf, n, dtype, op));
  /* local rank 0 of every node, and only those, hold d->leaders */
  if (d->leaders != MPI_COMM_NULL) MT_TRY(mt__allreduce_ring(d, d->leaders, buf, n, dtype, op));
  if (ls > 1) MT_TRY(mt__tree_bcast(d, d->local, 0, buf, n, dtype));
  return MT_OK;
}

#endif
