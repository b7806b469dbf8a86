/* multicolor.c: the "multi-color" allreduce of IBM's PowerAI DDL (Cho et al. 2017). The message
 * is split into k parts ("colours"); part c is reduced up and then broadcast down its own
 * spanning tree, a binary tree over the ranks relabelled v = (r - root_c) mod p with root_c =
 * c*p/k. Each tree puts different ranks at the root and in the interior, so with every colour
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

typedef struct {
  int64_t off, n, K; /* the part's elements and sub-chunks */
  int parent, nch, child[2], wparent, wchild[2];
  int64_t red;                 /* sub-chunks folded: children's parts added into buf */
  char arrived[2][MT__MC_WIN]; /* child i's sub-chunk j is in its slot */
  win rx[2];                   /* receives from the children (fin unused: `red` frees slots) */
  win up, down, tx[2];         /* send to parent, receive from parent, sends to children */
} colour;

enum { RX, UP, DOWN, TX }; /* what an active request is */
typedef struct {
  int c, kind, i;
  int64_t j;
} reqinfo;

typedef struct {
  mt_dist *d;
  MPI_Comm comm;
  char *buf, *slots;
  size_t es;
  int64_t C;
  int dtype, op, na;
  MPI_Datatype ty;
  colour *col;
  MPI_Request *reqs;
  int *peers;
  reqinfo *info;
} mc;

static char *slot(const mc *s, int c, int i, int64_t j) {
  return s->slots + (((size_t)c * 2 + (size_t)i) * MT__MC_WIN + (size_t)(j % MT__MC_WIN)) * (size_t)s->C * s->es;
}
static char *chunk(const mc *s, const colour *cl, int64_t j) { return s->buf + (cl->off + j * s->C) * (int64_t)s->es; }
static int chunk_len(const mc *s, const colour *cl, int64_t j) {
  return (int)(cl->n - j * s->C < s->C ? cl->n - j * s->C : s->C);
}

/* post one request; 0 on MPI failure */
static int post(mc *s, int c, int kind, int i, int64_t j) {
  colour *cl = &s->col[c];
  MPI_Request *rq = &s->reqs[s->na];
  int len = chunk_len(s, cl, j), rc, peer, wpeer;
  if (kind == RX || kind == TX) peer = cl->child[i], wpeer = cl->wchild[i];
  else peer = cl->parent, wpeer = cl->wparent;
  int tag = MT__MC_TAG + 2 * c + (kind == DOWN || kind == TX);
  if (kind == RX) rc = MPI_Irecv(slot(s, c, i, j), len, s->ty, peer, tag, s->comm, rq);
  else if (kind == DOWN) rc = MPI_Irecv(chunk(s, cl, j), len, s->ty, peer, tag, s->comm, rq);
  else rc = MPI_Isend(chunk(s, cl, j), len, s->ty, peer, tag, s->comm, rq);
  if (rc != MPI_SUCCESS) return 0;
  s->peers[s->na] = wpeer;
  s->info[s->na++] = (reqinfo){c, kind, i, j};
  return 1;
}

/* post everything colour c's state allows; 1 when something changed, -1 on MPI failure */
static int advance(mc *s, int c) {
  colour *cl = &s->col[c];
  int changed = 0;
  /* fold sub-chunk `red` once every child's copy is in; children in a fixed order */
  while (cl->red < cl->K) {
    int all = 1;
    for (int i = 0; i < cl->nch; i++) all &= cl->arrived[i][cl->red % MT__MC_WIN];
    if (!all) break;
    for (int i = 0; i < cl->nch; i++) {
      mt__dist_reduce(chunk(s, cl, cl->red), slot(s, c, i, cl->red), chunk_len(s, cl, cl->red), s->dtype, s->op);
      cl->arrived[i][cl->red % MT__MC_WIN] = 0;
    }
    cl->red++;
    changed = 1;
  }
  /* receive slots are free again once the sub-chunk WIN back is folded */
  for (int i = 0; i < cl->nch; i++)
    while (cl->rx[i].post < cl->K && cl->rx[i].post < cl->red + MT__MC_WIN) {
      if (!post(s, c, RX, i, cl->rx[i].post++)) return -1;
      changed = 1;
    }
  int64_t final = cl->red; /* sub-chunks holding the full result */
  if (cl->parent >= 0) {
    while (win_open(&cl->up, cl->red)) {
      if (!post(s, c, UP, 0, cl->up.post++)) return -1;
      changed = 1;
    }
    /* the result overwrites sub-chunk j only once its send up has completed */
    while (win_open(&cl->down, cl->up.fin)) {
      if (!post(s, c, DOWN, 0, cl->down.post++)) return -1;
      changed = 1;
    }
    final = cl->down.fin;
  }
  for (int i = cl->nch - 1; i >= 0; i--) /* the larger subtree first */
    while (win_open(&cl->tx[i], final)) {
      if (!post(s, c, TX, i, cl->tx[i].post++)) return -1;
      changed = 1;
    }
  return changed;
}

static int finished(const colour *cl) {
  if (cl->red < cl->K) return 0;
  if (cl->parent >= 0 && (cl->up.fin < cl->K || cl->down.fin < cl->K)) return 0;
  for (int i = 0; i < cl->nch; i++)
    if (cl->tx[i].fin < cl->K) return 0;
  return 1;
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

mt_status mt__allreduce_multicolor(mt_dist *d, MPI_Comm comm, void *buf, int64_t n, int dtype, int op) {
  int p = 1, r = 0;
  if (MPI_Comm_size(comm, &p) != MPI_SUCCESS || MPI_Comm_rank(comm, &r) != MPI_SUCCESS)
    return mt__error(MT_ERR_DIST, "%s: multicolor: not a valid communicator", mt__dist_current(d));
  mc s = {.d = d, .comm = comm, .buf = buf, .es = mt_dtype_size(dtype), .dtype = dtype, .op = op};
  if (!s.es) return mt__error(MT_ERR_DTYPE, "%s: multicolor: invalid dtype %d", mt__dist_current(d), dtype);
  if (p == 1 || n <= 0) return MT_OK;
  int k = d->colors > 0 ? d->colors : p < 4 ? p : 4;
  if (k > MT__MC_MAXCOLORS) k = MT__MC_MAXCOLORS; /* tags stay small; more trees add nothing */
  int64_t pmax = n / k + (n % k > 0);
  s.C = (d->chunk_bytes > 0 ? d->chunk_bytes : 256 << 10) / (int64_t)s.es;
  if (s.C > INT_MAX / 2) s.C = INT_MAX / 2;
  if (s.C < 1) s.C = 1;
  if (s.C > pmax) s.C = pmax;
  /* scratch: receive slots, then colours, requests, peers, request info */
  size_t o_col = align64((size_t)k * 2 * MT__MC_WIN * (size_t)s.C * s.es);
  size_t o_req = align64(o_col + (size_t)k * sizeof(colour));
  size_t o_peer = align64(o_req + (size_t)k * MT__MC_REQS * sizeof(MPI_Request));
  size_t o_info = align64(o_peer + (size_t)k * MT__MC_REQS * sizeof(int));
  size_t total = o_info + (size_t)k * MT__MC_REQS * sizeof(reqinfo);
  char *scr = mt__dist_scratch(d, total);
  if (!scr) return mt__error(MT_ERR_MEMORY, "%s: multicolor: no scratch of %zu bytes", mt__dist_current(d), total);
  s.slots = scr;
  s.col = (colour *)(scr + o_col);
  s.reqs = (MPI_Request *)(scr + o_req);
  s.peers = (int *)(scr + o_peer);
  s.info = (reqinfo *)(scr + o_info);
  s.ty = mt__dist_bytes_type(dtype);
  memset(s.col, 0, (size_t)k * sizeof(colour));
  for (int c = 0; c < k; c++) {
    colour *cl = &s.col[c];
    cl->off = c * (n / k) + (c < n % k ? c : n % k);
    cl->n = n / k + (c < n % k);
    cl->K = (cl->n + s.C - 1) / s.C;
    int root = (int)((int64_t)c * p / k), v = (r - root + p) % p;
    cl->parent = v ? ((v - 1) / 2 + root) % p : -1;
    cl->wparent = cl->parent < 0 ? -1 : mt__dist_world_rank(d, comm, cl->parent);
    for (int i = 0; i < 2; i++)
      if (2 * (int64_t)v + 1 + i < p) {
        cl->child[cl->nch] = (int)((2 * (int64_t)v + 1 + i + root) % p);
        cl->wchild[cl->nch] = mt__dist_world_rank(d, comm, cl->child[cl->nch]);
        cl->nch++;
      }
  }
  for (;;) {
    int done = 1;
    for (int changed = 1; changed;) {
      changed = 0;
      for (int c = 0; c < k; c++) {
        int a = advance(&s, c);
        if (a < 0) {
          for (int q = 0; q < s.na; q++) { /* nothing may land in scratch after we return */
            MPI_Cancel(&s.reqs[q]);
            MPI_Request_free(&s.reqs[q]);
          }
          return mt__error(MT_ERR_DIST, "%s: multicolor: posting a transfer failed", mt__dist_current(d));
        }
        changed |= a;
      }
    }
    for (int c = 0; c < k; c++) done &= finished(&s.col[c]);
    if (done) break;
    if (s.na == 0) return mt__error(MT_ERR_INTERNAL, "%s: multicolor: stalled", mt__dist_current(d));
    int idx = -1;
    MT_TRY(mt__dist_waitany(d, s.na, s.reqs, s.peers, &idx));
    if (idx < 0 || idx >= s.na)
      return mt__error(MT_ERR_INTERNAL, "%s: multicolor: waitany gave no request", mt__dist_current(d));
    reqinfo in = s.info[idx];
    s.na--; /* keep the active requests packed */
    s.reqs[idx] = s.reqs[s.na];
    s.peers[idx] = s.peers[s.na];
    s.info[idx] = s.info[s.na];
    colour *cl = &s.col[in.c];
    if (in.kind == RX) cl->arrived[in.i][in.j % MT__MC_WIN] = 1;
    else if (in.kind == UP) win_done(&cl->up, in.j);
    else if (in.kind == DOWN) win_done(&cl->down, in.j);
    else win_done(&cl->tx[in.i], in.j);
  }
  return MT_OK;
}

#endif
