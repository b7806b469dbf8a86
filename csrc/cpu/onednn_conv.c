/* onednn_conv.c: 2-d float32 convolution through oneDNN (Debian's libdnnl, 2.x C API): the
 * forward, gradInput, and gradWeight + gradBias passes on the contiguous NCHW / OIHW tensors the
 * CPU backend holds, in one of two variants: MT__ONEDNN_BLOCKED lets oneDNN pick the layouts
 * (format `any`: blocked ones such as nChw8c where its direct JIT kernels want them) and
 * reorders the operands into them and the result back, by reorder primitives made with the
 * convolution; MT__ONEDNN_NCHW keeps the activations as they are (oneDNN then mostly runs its
 * own im2col + GEMM), reordering only the weights. Neither wins everywhere (stride 2 favours
 * NCHW here), so conv_backend.c times them. It also decides when this runs at all.
 * The same code runs the 3-d convolutions of nn_vol_onednn.c (NCDHW / OIDHW, blocked variant):
 * mt__onednn_run takes 2 or 3 spatial dimensions, and only the dims and memory tags differ.
 * Without MT_ONEDNN only the stubs at the end are compiled. */
#include "onednn_conv.h"
#include "../core/error.h"
#include "../moontorch.h"

#ifdef MT_ONEDNN
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <dnnl.h>

/* What a convolution is keyed by: its shape (spatial rank included), pass, bias or not, the
 * layout variant, and the thread count (oneDNN cuts its work for the OpenMP thread count at
 * creation; Debian's build runs on the same libgomp as the rest of the backend, so
 * torch.setnumthreads sets its threads too). */
#define KEY_LEN 28
typedef struct entry {
  int64_t key[KEY_LEN];
  uint64_t stamp;                   /* last use, for replacing the least recently used */
  int used, ok;                     /* ok 0: oneDNN has no implementation for this key (nothing below is made) */
  dnnl_primitive_desc_t fwd_pd, pd; /* fwd_pd: the backward passes' hint, kept while pd lives */
  dnnl_primitive_t conv, rin[2], rout;
  dnnl_memory_desc_t umd[3], cmd[3]; /* a, b, out: as the caller holds them / as oneDNN wants */
  dnnl_memory_desc_t bias_md;
  size_t scratch;
} entry;

/* The process-wide oneDNN context. Why global: the CPU op table has no context argument (its
 * functions are free functions like OpenBLAS's), oneDNN wants one engine for the CPU, and
 * making a convolution primitive JIT-compiles its kernels (milliseconds), so they are kept
 * between calls: in a bounded cache (SLOTS entries, least recently used replaced; ResNet-50
 * trains with about 60: 20 shapes x 3 passes; the 3-d convolutions share it, so a step of
 * both still fits without either evicting the other). One mutex guards it and is held while a
 * convolution runs: each one already uses every OpenMP thread, so two at once would only share
 * the cores, and this lets the context own the scratchpad and reorder buffers (grown as needed,
 * freed never: the same few sizes come back every step) instead of allocating them per call.
 * The engine, primitives and buffers live until the process ends, like OpenBLAS's. */
#define SLOTS 128
enum { BUF_A, BUF_B, BUF_OUT, BUF_DW, BUF_DB, BUF_SCRATCH, NBUF };
static struct {
  pthread_mutex_t lock;
  int state; /* 0 not tried, 1 ready, -1 no CPU engine */
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  uint64_t clock;
  entry slots[SLOTS];
  void *buf[NBUF];
  size_t bufsz[NBUF];
} ctx = {.lock = PTHREAD_MUTEX_INITIALIZER};

int mt__onednn_available(void) { return 1; }

static void entry_clear(entry *e) {
  if (e->conv) dnnl_primitive_destroy(e->conv);
  for (int i = 0; i < 2; i++)
    if (e->rin[i]) dnnl_primitive_destroy(e->rin[i]);
  if (e->rout) dnnl_primitive_destroy(e->rout);
  if (e->pd) dnnl_primitive_desc_destroy(e->pd);
  if (e->fwd_pd) dnnl_primitive_desc_destroy(e->fwd_pd);
  memset(e, 0, sizeof *e);
}

static void make_key(int64_t *k, const mt__dnn_shape *sh, int dir, int bias, int variant, int nth) {
  memset(k, 0, KEY_LEN * sizeof *k);
  int64_t *p = k;
  *p++ = sh->sp, *p++ = sh->N, *p++ = sh->C, *p++ = sh->Cg, *p++ = sh->O, *p++ = sh->groups;
  for (int i = 0; i < sh->sp; i++)
    p[i] = sh->in[i], p[3 + i] = sh->k[i], p[6 + i] = sh->out[i], p[9 + i] = sh->stride[i], p[12 + i] = sh->pad[i],
    p[15 + i] = sh->dil[i];
  p += 18;
  *p++ = dir, *p++ = bias, *p++ = variant, *p = nth;
}

/* a reorder from -> to, or NULL where the layouts are the same */
static dnnl_status_t make_reorder(dnnl_primitive_t *r, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
  *r = NULL;
  if (dnnl_memory_desc_equal(from, to)) return dnnl_success;
  dnnl_primitive_desc_t pd;
  dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, from, ctx.eng, to, ctx.eng, NULL);
  if (s != dnnl_success) return s;
  s = dnnl_primitive_create(r, pd);
  dnnl_primitive_desc_destroy(pd);
  return s;
}

/* the exec-argument ids of a, b and out for each pass */
static const int ARGS[3][3] = {{DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                               {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                               {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS}};

/* Makes e's primitives; dnnl_unimplemented where oneDNN has none for the shape. */
static dnnl_status_t entry_make(entry *e, const mt__dnn_shape *sh, int dir, int bias, int variant) {
  const int sp = sh->sp, grouped = sh->groups > 1, an = 2 + sp, wn = an + grouped;
  dnnl_dims_t xd = {sh->N, sh->C}, yd = {sh->N, sh->O}, wd = {sh->O, sh->Cg}, bd = {sh->O};
  if (grouped) wd[0] = sh->groups, wd[1] = sh->O / sh->groups, wd[2] = sh->Cg;
  dnnl_dims_t st = {0}, dil = {0}, pl = {0}, pr = {0};
  for (int i = 0; i < sp; i++) {
    xd[2 + i] = sh->in[i], yd[2 + i] = sh->out[i], wd[wn - sp + i] = sh->k[i];
    st[i] = sh->stride[i], dil[i] = sh->dil[i] - 1, pl[i] = sh->pad[i];
    /* padding after the image: what makes oneDNN's output size ours (never below 0: the floor
     * in our output size already drops the rows a stride would not reach) */
    int64_t p = (sh->out[i] - 1) * sh->stride[i] + sh->dil[i] * (sh->k[i] - 1) + 1 - sh->in[i] - sh->pad[i];
    pr[i] = p > 0 ? p : 0;
  }
  const dnnl_format_tag_t utag = sp == 2 ? dnnl_nchw : dnnl_ncdhw;
  const dnnl_format_tag_t wtag = sp == 2 ? (grouped ? dnnl_goihw : dnnl_oihw) : (grouped ? dnnl_goidhw : dnnl_oidhw);
  dnnl_memory_desc_t x, y, w, b, ux, uy, uw;
  dnnl_status_t s;
#define TRY(call)                                \
  do {                                           \
    if ((s = (call)) != dnnl_success) goto done; \
  } while (0)
  dnnl_primitive_attr_t attr = NULL;
  const dnnl_format_tag_t act = variant == MT__ONEDNN_NCHW ? utag : dnnl_format_tag_any;
  TRY(dnnl_memory_desc_init_by_tag(&x, an, xd, dnnl_f32, act));
  TRY(dnnl_memory_desc_init_by_tag(&y, an, yd, dnnl_f32, act));
  TRY(dnnl_memory_desc_init_by_tag(&w, wn, wd, dnnl_f32, dnnl_format_tag_any));
  TRY(dnnl_memory_desc_init_by_tag(&b, 1, bd, dnnl_f32, dnnl_x));
  TRY(dnnl_memory_desc_init_by_tag(&ux, an, xd, dnnl_f32, utag));
  TRY(dnnl_memory_desc_init_by_tag(&uy, an, yd, dnnl_f32, utag));
  TRY(dnnl_memory_desc_init_by_tag(&uw, wn, wd, dnnl_f32, wtag));
  e->bias_md = b;
  /* our buffers hold the scratchpad (one per context, not one per primitive) */
  TRY(dnnl_primitive_attr_create(&attr));
  TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  dnnl_convolution_desc_t fd, bdsc;
  TRY(dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &x, &w,
                                                 dir == MT__CONV_FWD && bias ? &b : NULL, &y, st, dil, pl, pr));
  TRY(dnnl_primitive_desc_create(&e->fwd_pd, &fd, attr, ctx.eng, NULL));
  if (dir == MT__CONV_FWD) {
    e->pd = e->fwd_pd, e->fwd_pd = NULL;
  } else {
    if (dir == MT__CONV_BWD_DATA)
      TRY(dnnl_dilated_convolution_backward_data_desc_init(&bdsc, dnnl_convolution_direct, &x, &w, &y, st, dil, pl,
                                                           pr));
    else
      TRY(dnnl_dilated_convolution_backward_weights_desc_init(&bdsc, dnnl_convolution_direct, &x, &w, bias ? &b : NULL,
                                                              &y, st, dil, pl, pr));
    TRY(dnnl_primitive_desc_create(&e->pd, &bdsc, attr, ctx.eng, e->fwd_pd));
  }
  TRY(dnnl_primitive_create(&e->conv, e->pd));
  const dnnl_memory_desc_t *user[3][3] = {{&ux, &uw, &uy}, {&uy, &uw, &ux}, {&ux, &uy, &uw}};
  for (int i = 0; i < 3; i++) {
    e->umd[i] = *user[dir][i];
    e->cmd[i] = *dnnl_primitive_desc_query_md(e->pd, dnnl_query_exec_arg_md, ARGS[dir][i]);
  }
  TRY(make_reorder(&e->rin[0], &e->umd[0], &e->cmd[0]));
  TRY(make_reorder(&e->rin[1], &e->umd[1], &e->cmd[1]));
  TRY(make_reorder(&e->rout, &e->cmd[2], &e->umd[2]));
  e->scratch = dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(e->pd, dnnl_query_scratchpad_md, 0));
  e->ok = 1;
done:
#undef TRY
  if (attr) dnnl_primitive_attr_destroy(attr);
  return s;
}

/* the context's buffer i, at least n bytes */
static void *buf(int i, size_t n) {
  if (n == 0) n = 64;
  if (ctx.bufsz[i] >= n) return ctx.buf[i];
  free(ctx.buf[i]);
  n = (n + 4095) & ~(size_t)4095;
  ctx.buf[i] = aligned_alloc(64, n);
  ctx.bufsz[i] = ctx.buf[i] ? n : 0;
  return ctx.buf[i];
}

/* the entry for key (made now when missing), or NULL with *st set */
static entry *lookup(const mt__dnn_shape *sh, int dir, int bias, int variant, const char *op, mt_status *st) {
  int64_t k[KEY_LEN];
  make_key(k, sh, dir, bias, variant, mt_get_num_threads());
  entry *e = NULL, *lru = &ctx.slots[0];
  for (int i = 0; i < SLOTS && !e; i++) {
    entry *s = &ctx.slots[i];
    if (s->used && !memcmp(s->key, k, sizeof k)) e = s;
    if (!s->used || (lru->used && s->stamp < lru->stamp)) lru = s;
  }
  if (!e) {
    e = lru;
    entry_clear(e);
    memcpy(e->key, k, sizeof k);
    e->used = 1;
    dnnl_status_t s = entry_make(e, sh, dir, bias, variant);
    if (s != dnnl_success) {
      entry_clear(e);
      memcpy(e->key, k, sizeof k);
      e->used = 1; /* remembered as unimplemented (ok 0), so not tried again */
      if (s != dnnl_unimplemented) {
        e->used = 0;
        *st = mt__error(s == dnnl_out_of_memory ? MT_ERR_MEMORY : MT_ERR_INTERNAL,
                        "%s: oneDNN could not make the convolution (status %d)", op, (int)s);
        return NULL;
      }
    }
  }
  e->stamp = ++ctx.clock;
  return e;
}

/* runs primitive p on the given (arg, memory) pairs */
static dnnl_status_t exec(dnnl_primitive_t p, int n, const int *arg, dnnl_memory_t *mem) {
  dnnl_exec_arg_t a[6];
  for (int i = 0; i < n; i++) a[i].arg = arg[i], a[i].memory = mem[i];
  dnnl_status_t s = dnnl_primitive_execute(p, ctx.stream, n, a);
  return s == dnnl_success ? dnnl_stream_wait(ctx.stream) : s;
}

static dnnl_status_t reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
  static const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
  dnnl_memory_t m[2] = {from, to};
  return exec(r, 2, arg, m);
}

/* Runs e on the caller's pointers: reorders a and b in, the convolution, out back. Memories:
 * 0..2 the caller's a, b, out; 3..5 their oneDNN layouts where those differ; 6 bias; 7 scratch. */
static mt_status entry_run(entry *e, const mt__conv_call *c, const mt__dnn_shape *sh, const char *op) {
  const int dir = c->dir;
  size_t wsz = (size_t)(sh->O * sh->Cg);
  for (int i = 0; i < sh->sp; i++) wsz *= (size_t)sh->k[i];
  void *user[3] = {(void *)c->a, (void *)c->b, c->out};
  if (dir == MT__CONV_BWD_WEIGHTS) user[2] = buf(BUF_DW, wsz * sizeof(float)); /* then added to out */
  void *conv_side[3] = {e->rin[0] ? buf(BUF_A, dnnl_memory_desc_get_size(&e->cmd[0])) : user[0],
                        e->rin[1] ? buf(BUF_B, dnnl_memory_desc_get_size(&e->cmd[1])) : user[1],
                        e->rout ? buf(BUF_OUT, dnnl_memory_desc_get_size(&e->cmd[2])) : user[2]};
  void *bias = dir == MT__CONV_FWD                      ? (void *)c->bias
               : dir == MT__CONV_BWD_WEIGHTS && c->out2 ? buf(BUF_DB, (size_t)sh->O * sizeof(float))
                                                        : NULL;
  void *scratch = buf(BUF_SCRATCH, e->scratch);
  for (int i = 0; i < 3; i++)
    if (!user[i] || !conv_side[i]) return mt__error(MT_ERR_MEMORY, "%s: out of memory for oneDNN's buffers", op);
  if (!scratch || (c->out2 && !bias)) return mt__error(MT_ERR_MEMORY, "%s: out of memory for oneDNN's buffers", op);
  dnnl_memory_t m[8] = {NULL};
  dnnl_status_t s = dnnl_success;
  for (int i = 0; i < 3 && s == dnnl_success; i++) {
    s = dnnl_memory_create(&m[i], &e->umd[i], ctx.eng, user[i]);
    if (s == dnnl_success && conv_side[i] != user[i])
      s = dnnl_memory_create(&m[3 + i], &e->cmd[i], ctx.eng, conv_side[i]);
  }
  if (s == dnnl_success && bias) s = dnnl_memory_create(&m[6], &e->bias_md, ctx.eng, bias);
  if (s == dnnl_success)
    s = dnnl_memory_create(&m[7], dnnl_primitive_desc_query_md(e->pd, dnnl_query_scratchpad_md, 0), ctx.eng, scratch);
  for (int i = 0; i < 2 && s == dnnl_success; i++)
    if (e->rin[i]) s = reorder(e->rin[i], m[i], m[3 + i]);
  if (s == dnnl_success) {
    int arg[5] = {ARGS[dir][0], ARGS[dir][1], ARGS[dir][2], DNNL_ARG_SCRATCHPAD,
                  dir == MT__CONV_FWD ? DNNL_ARG_BIAS : DNNL_ARG_DIFF_BIAS};
    dnnl_memory_t cm[5] = {m[3] ? m[3] : m[0], m[4] ? m[4] : m[1], m[5] ? m[5] : m[2], m[7], m[6]};
    s = exec(e->conv, bias ? 5 : 4, arg, cm);
  }
  if (s == dnnl_success && e->rout) s = reorder(e->rout, m[5], m[2]);
  for (int i = 0; i < 8; i++)
    if (m[i]) dnnl_memory_destroy(m[i]);
  if (s != dnnl_success)
    return mt__error(MT_ERR_INTERNAL, "%s: oneDNN failed to run the convolution (status %d)", op, (int)s);
  if (dir == MT__CONV_BWD_WEIGHTS) { /* accumulate, as the native kernels do */
    const float *dw = user[2], *db = bias, sc = c->scale;
    float *out = c->out;
#pragma omp parallel for if (wsz > 65536) schedule(static)
    for (size_t i = 0; i < wsz; i++) out[i] += sc * dw[i];
    if (c->out2)
      for (int64_t o = 0; o < sh->O; o++) c->out2[o] += sc * db[o];
  }
  return MT_OK;
}

mt_status mt__onednn_run(const mt__conv_call *c, const mt__dnn_shape *sh, int variant, const char *op, int *ran) {
  *ran = 0;
  if (sh->sp < 2 || sh->sp > 3) return mt__error(MT_ERR_INTERNAL, "%s: oneDNN path given %d spatial dims", op, sh->sp);
  const int bias = c->dir == MT__CONV_FWD ? c->bias != NULL : c->dir == MT__CONV_BWD_WEIGHTS && c->out2 != NULL;
  mt_status st = MT_OK;
  pthread_mutex_lock(&ctx.lock);
  if (ctx.state == 0) {
    ctx.state = dnnl_engine_create(&ctx.eng, dnnl_cpu, 0) == dnnl_success &&
                        dnnl_stream_create(&ctx.stream, ctx.eng, dnnl_stream_default_flags) == dnnl_success
                    ? 1
                    : -1;
  }
  if (ctx.state == 1) {
    entry *e = lookup(sh, c->dir, bias, variant, op, &st);
    if (e && e->ok) {
      st = entry_run(e, c, sh, op);
      *ran = st == MT_OK;
    }
  }
  pthread_mutex_unlock(&ctx.lock);
  return st;
}

#else /* built without oneDNN: the native kernels run every convolution */

int mt__onednn_available(void) { return 0; }

mt_status mt__onednn_run(const mt__conv_call *c, const mt__dnn_shape *sh, int variant, const char *op, int *ran) {
  *ran = 0;
  return MT_OK;
}
#endif

/* the 2-d geometry as a shape of the shared path (H then W, as oneDNN orders them) */
mt_status mt__onednn_conv(const mt__conv_call *c, const mt_conv_geom *g, int variant, int *ran) {
  const mt__dnn_shape sh = {.sp = 2,
                            .N = g->N,
                            .C = g->C,
                            .Cg = g->Cg,
                            .O = g->O,
                            .groups = g->groups,
                            .in = {g->H, g->W},
                            .k = {g->kH, g->kW},
                            .out = {g->oH, g->oW},
                            .stride = {g->sH, g->sW},
                            .pad = {g->pH, g->pW},
                            .dil = {g->dH, g->dW}};
  return mt__onednn_run(c, &sh, variant, "SpatialConvolution", ran);
}
