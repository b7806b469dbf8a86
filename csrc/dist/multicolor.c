/* multicolor.c: the "multi-color" allreduce of IBM's PowerAI DDL (Cho et al. 2017). The message
 * is split into k = ncolours parts ("colours"); part c is reduced up and then broadcast down its
 * own spanning tree, a binary tree over the p ranks relabelled vrank = (rank - root_c) mod p
 * with root_c = c*p/k. Each tree puts different ranks at the root and in the interior, so with every colour
 * in flight at once the links carry traffic in both directions instead of one tree's links
 * idling while another works.
 *
 * Every part moves in sub-chunks of d->chunk_bytes with MT__MC_WIN of them in flight on each
 * link, so a level forwards sub-chunk j while j+1 is arriving. One event loop drives all
 * colours: it posts whatever each colour's state allows, waits for any request, and folds
 * children's sub-chunks in a fixed order (the root's result, and so every rank's, does not
 * depend on arrival order). Scratch holds the receive slots and the loop's state. */
#include <limits.h>
#include <string.h>
#include "dist.h"

#ifdef MT_WITH_MPI

#define MT__MC_TAG 7500 /* colour c uses tags TAG + 2c (up) and TAG + 2c + 1 (down) */
#define MT__MC_MAXCOLORS 64
#define MT__MC_WIN 2                 /* sub-chunks in flight per link and direction */
#define MT__MC_REQS (6 * MT__MC_WIN) /* per colour: 2 children up + up + down + 2 children down */

/* in-order completion over a window: done flags of the last WIN posts, *fin counts done ones */
typedef struct {
  int64_t post, fin;
  char done[MT__MC_WIN];
} win;

static void win_done(win *w, int64_t j) {
  w->done[j % MT__MC_WIN] = 1;
  while (w->fin < w->post && w->done[w->fin % MT__MC_WIN]) w->done[w->fin++ % MT__MC_WIN] = 0;
}
static int win_open(const win *w, int64_t limit) { return w->post < limit && w->post - w->fin < MT__MC_WIN; }

/* one colour: its part of buf (elements [off, off + n), in `chunks` sub-chunks) and its place in
 * the colour's tree (parent -1 at the root; world_*: the same peers as world ranks) */
typedef struct {
  int64_t off, n, chunks;
  int parent, nchildren, child[2], world_parent, world_child[2];
  int64_t folded;              /* sub-chunks folded: children's parts added into buf */
  char arrived[2][MT__MC_WIN]; /* child i's sub-chunk j is in its slot */
  win rx[2];                   /* receives from the children (fin unused: `folded` frees slots) */
  win up, down, tx[2];         /* send to parent, receive from parent, sends to children */
} colour;

enum { RX, UP, DOWN, TX }; /* what an active request is */
typedef struct {
  int colour, kind, child; /* child: which child's link (RX, TX) */
  int64_t chunk;
} reqinfo;

/* the state of one allreduce: buf of n elements of esize bytes, sub-chunks of chunk_elems
 * elements, the colours, and the `active` requests with their peers and what each one is */
typedef struct {
  mt_dist *d;
  MPI_Comm comm;
  char *buf, *slots;
  size_t esize;
  int64_t chunk_elems;
  int dtype, op, active;
  MPI_Datatype mpi_type;
  colour *colours;
  MPI_Request *reqs;
  int *peers;
  reqinfo *info;
} multicolor;

static char *slot(const multicolor *s, int c, int i, int64_t j) {
  return s->slots +
         (((size_t)c * 2 + (size_t)i) * MT__MC_WIN + (size_t)(j % MT__MC_WIN)) * (size_t)s->chunk_elems * s->esize;
}
static char *chunk(const multicolor *s, const colour *col, int64_t j) {
  return s->buf + (col->off + j * s->chunk_elems) * (int64_t)s->esize;
}
static int chunk_len(const multicolor *s, const colour *col, int64_t j) {
  return (int)(col->n - j * s->chunk_elems < s->chunk_elems ? col->n - j * s->chunk_elems : s->chunk_elems);
}

/* post one request; 0 on MPI failure */
static int post(multicolor *s, int c, int kind, int i, int64_t j) {
  colour *col = &s->colours[c];
  MPI_Request *rq = &s->reqs[s->active];
  int len = chunk_len(s, col, j), rc, peer, world_peer;
  if (kind == RX || kind == TX) peer = col->child[i], world_peer = col->world_child[i];
  else peer = col->parent, world_peer = col->world_parent;
  int tag = MT__MC_TAG + 2 * c + (kind == DOWN || kind == TX);
  if (kind == RX) rc = MPI_Irecv(slot(s, c, i, j), len, s->mpi_type, peer, tag, s->comm, rq);
  else if (kind == DOWN) rc = MPI_Irecv(chunk(s, col, j), len, s->mpi_type, peer, tag, s->comm, rq);
  else rc = MPI_Isend(chunk(s, col, j), len, s->mpi_type, peer, tag, s->comm, rq);
  if (rc != MPI_SUCCESS) return 0;
  s->peers[s->active] = world_peer;
  s->info[s->active++] = (reqinfo){c, kind, i, j};
  return 1;
}

/* post everything colour c's state allows; 1 when something changed, -1 on MPI failure */
static int advance(multicolor *s, int c) {
  colour *col = &s->colours[c];
  int changed = 0;
  /* fold sub-chunk `folded` once every child's copy is in; children in a fixed order */
  while (col->folded < col->chunks) {
    int all = 1;
    for (int i = 0; i < col->nchildren; i++) all &= col->arrived[i][col->folded % MT__MC_WIN];
    if (!all) break;
    for (int i = 0; i < col->nchildren; i++) {
      mt__dist_reduce(chunk(s, col, col->folded), slot(s, c, i, col->folded), chunk_len(s, col, col->folded), s->dtype,
                      s->op);
      col->arrived[i][col->folded % MT__MC_WIN] = 0;
    }
    col->folded++;
    changed = 1;
  }
  /* receive slots are free again once the sub-chunk WIN back is folded */
  for (int i = 0; i < col->nchildren; i++)
    while (col->rx[i].post < col->chunks && col->rx[i].post < col->folded + MT__MC_WIN) {
      if (!post(s, c, RX, i, col->rx[i].post++)) return -1;
      changed = 1;
    }
  int64_t final = col->folded; /* sub-chunks holding the full result */
  if (col->parent >= 0) {
    while (win_open(&col->up, col->folded)) {
      if (!post(s, c, UP, 0, col->up.post++)) return -1;
      changed = 1;
    }
    /* the result overwrites sub-chunk j only once its send up has completed */
    while (win_open(&col->down, col->up.fin)) {
      if (!post(s, c, DOWN, 0, col->down.post++)) return -1;
      changed = 1;
    }
    final = col->down.fin;
  }
  for (int i = col->nchildren - 1; i >= 0; i--) /* the larger subtree first */
    while (win_open(&col->tx[i], final)) {
      if (!post(s, c, TX, i, col->tx[i].post++)) return -1;
      changed = 1;
    }
  return changed;
}

static int finished(const colour *col) {
  if (col->folded < col->chunks) return 0;
  if (col->parent >= 0 && (col->up.fin < col->chunks || col->down.fin < col->chunks)) return 0;
  for (int i = 0; i < col->nchildren; i++)
    if (col->tx[i].fin < col->chunks) return 0;
  return 1;
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* buf: n elements of dtype, reduced in place with op across the ranks of comm */
mt_status mt__allreduce_multicolor(mt_dist *d, MPI_Comm comm, void *buf, int64_t n, int dtype, int op) {
  int ranks = 1, rank = 0;
  if (MPI_Comm_size(comm, &ranks) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: multicolor: not a valid communicator", mt__dist_current(d));
  multicolor s = {.d = d, .comm = comm, .buf = buf, .esize = mt_dtype_size(dtype), .dtype = dtype, .op = op};
  if (!s.esize) return mt__error(MT_ERR_DTYPE, "%s: multicolor: invalid dtype %d", mt__dist_current(d), dtype);
  if (ranks == 1 || n <= 0) return MT_OK;
  int ncolours = d->colors > 0 ? d->colors : ranks < 4 ? ranks : 4;
  if (ncolours > MT__MC_MAXCOLORS) ncolours = MT__MC_MAXCOLORS; /* tags stay small; more trees add nothing */
  int64_t longest = n / ncolours + (n % ncolours > 0);
  s.chunk_elems = (d->chunk_bytes > 0 ? d->chunk_bytes : 256 << 10) / (int64_t)s.esize;
  if (s.chunk_elems > INT_MAX / 2) s.chunk_elems = INT_MAX / 2;
  if (s.chunk_elems < 1) s.chunk_elems = 1;
  if (s.chunk_elems > longest) s.chunk_elems = longest;
  /* scratch: receive slots, then colours, requests, peers, request info */
  size_t o_col = align64((size_t)ncolours * 2 * MT__MC_WIN * (size_t)s.chunk_elems * s.esize);
  size_t o_req = align64(o_col + (size_t)ncolours * sizeof(colour));
  size_t o_peer = align64(o_req + (size_t)ncolours * MT__MC_REQS * sizeof(MPI_Request));
  size_t o_info = align64(o_peer + (size_t)ncolours * MT__MC_REQS * sizeof(int));
  size_t total = o_info + (size_t)ncolours * MT__MC_REQS * sizeof(reqinfo);
  char *scratch = mt__dist_scratch(d, total);
  if (!scratch) return mt__error(MT_ERR_MEMORY, "%s: multicolor: no scratch of %zu bytes", mt__dist_current(d), total);
  s.slots = scratch;
  s.colours = (colour *)(scratch + o_col);
  s.reqs = (MPI_Request *)(scratch + o_req);
  s.peers = (int *)(scratch + o_peer);
  s.info = (reqinfo *)(scratch + o_info);
  s.mpi_type = mt__dist_bytes_type(dtype);
  memset(s.colours, 0, (size_t)ncolours * sizeof(colour));
  for (int c = 0; c < ncolours; c++) {
    colour *col = &s.colours[c];
    col->off = c * (n / ncolours) + (c < n % ncolours ? c : n % ncolours);
    col->n = n / ncolours + (c < n % ncolours);
    col->chunks = (col->n + s.chunk_elems - 1) / s.chunk_elems;
    int root = (int)((int64_t)c * ranks / ncolours), vrank = (rank - root + ranks) % ranks;
    col->parent = vrank ? ((vrank - 1) / 2 + root) % ranks : -1;
    col->world_parent = col->parent < 0 ? -1 : mt__dist_world_rank(d, comm, col->parent);
    for (int i = 0; i < 2; i++)
      if (2 * (int64_t)vrank + 1 + i < ranks) {
        col->child[col->nchildren] = (int)((2 * (int64_t)vrank + 1 + i + root) % ranks);
        col->world_child[col->nchildren] = mt__dist_world_rank(d, comm, col->child[col->nchildren]);
        col->nchildren++;
      }
  }
  for (;;) {
    int done = 1;
    for (int changed = 1; changed;) {
      changed = 0;
      for (int c = 0; c < ncolours; c++) {
        int a = advance(&s, c);
        if (a < 0) {
          for (int q = 0; q < s.active; q++) { /* nothing may land in scratch after we return */
            MPI_Cancel(&s.reqs[q]);
            MPI_Request_free(&s.reqs[q]);
          }
          return mt__error(MT_ERR_DIST, "%s: multicolor: posting a transfer failed", mt__dist_current(d));
        }
        changed |= a;
      }
    }
    for (int c = 0; c < ncolours; c++) done &= finished(&s.colours[c]);
    if (done) break;
    if (s.active == 0) return mt__error(MT_ERR_INTERNAL, "%s: multicolor: stalled", mt__dist_current(d));
    int idx = -1;
    MT_TRY(mt__dist_waitany(d, s.active, s.reqs, s.peers, &idx));
    if (idx < 0 || idx >= s.active)
      return mt__error(MT_ERR_INTERNAL, "%s: multicolor: waitany gave no request", mt__dist_current(d));
    reqinfo completed = s.info[idx];
    s.active--; /* keep the active requests packed */
    s.reqs[idx] = s.reqs[s.active];
    s.peers[idx] = s.peers[s.active];
    s.info[idx] = s.info[s.active];
    colour *col = &s.colours[completed.colour];
    if (completed.kind == RX) col->arrived[completed.child][completed.chunk % MT__MC_WIN] = 1;
    else if (completed.kind == UP) win_done(&col->up, completed.chunk);
    else if (completed.kind == DOWN) win_done(&col->down, completed.chunk);
    else win_done(&col->tx[completed.child], completed.chunk);
  }
  return MT_OK;
}

#endif
