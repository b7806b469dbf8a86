/* nn_vol_onednn.c: float32 3-d convolution on the CPU through oneDNN (mt_nn_conv3d_onednn), the
 * fast path of nn.VolumetricConvolution and its variants. Why: their GEMM on vol2col columns
 * (csrc/nn/vol.c) has few rows (the output planes), where OpenBLAS runs at about the speed of
 * PyTorch's matrix product but half that of its 3-d convolution, which is oneDNN's direct JIT
 * kernels on blocked layouts. As csrc/cpu/onednn_conv.c does for 2-d convolutions (same
 * library, separate cache so the two never evict each other), each pass is a primitive made
 * once per shape, with `any` (blocked) layouts and reorders from and to the caller's NCDHW /
 * OIDHW tensors. Without oneDNN, or where it has no implementation, *ran is 0 and the caller
 * takes the vol2col path. */
#include "../core/error.h"
#include "../core/tensor.h"
#include "../moontorch.h"

#define OP "VolumetricConvolution"

/* the checks: 5-d contiguous float32 CPU tensors of consistent sizes; fills d[0..4] x, d[5..9]
 * w, d[10..14] y sizes from what the pass gives */
static mt_status vol_dnn_check(int pass, const mt_tensor *out, const mt_tensor *a, const mt_tensor *b, int64_t *d,
                               const int *geo) {
  const mt_tensor *ts[3] = {out, a, b};
  for (int i = 0; i < 3; i++) {
    if (!ts[i]) return mt__error(MT_ERR_ARG, OP ": an operand is NULL");
    if (ts[i]->ndim != 5 || ts[i]->dtype != MT_F32 || ts[i]->device != MT_CPU || !mt__is_contiguous(ts[i]))
      return mt__error(MT_ERR_ARG, OP ": oneDNN takes 5-d contiguous float32 CPU tensors");
  }
  /* x, w, y: which operand holds each (pass 0: out = y; 1: out = x; 2: out = w) */
  const mt_tensor *x = pass == 1 ? out : a, *w = pass == 0 || pass == 1 ? b : out, *y = pass == 0 ? NULL : pass == 1 ? a : b;
  for (int i = 0; i < 5; i++) d[i] = x->sizes[i], d[5 + i] = w->sizes[i];
  if (d[1] != d[6]) return mt__error(MT_ERR_SHAPE, OP ": input has %lld planes, weight expects %lld", (long long)d[1], (long long)d[6]);
  for (int i = 0; i < 3; i++) { /* T, H, W: stride geo[i], pad geo[3 + i], dilation geo[6 + i] */
    int64_t e = (int64_t)geo[6 + i] * (d[7 + i] - 1) + 1, n = d[2 + i] + 2 * geo[3 + i];
    if (geo[i] < 1 || geo[6 + i] < 1 || geo[3 + i] < 0 || n < e)
      return mt__error(MT_ERR_SHAPE, OP ": the kernel does not fit the padded input");
    d[12 + i] = (n - e) / geo[i] + 1;
  }
  d[10] = d[0], d[11] = d[5];
  if (y)
    for (int i = 0; i < 5; i++)
      if (y->sizes[i] != d[10 + i]) return mt__error(MT_ERR_SHAPE, OP ": gradOutput does not have the output's size");
  return MT_OK;
}

#ifdef MT_ONEDNN
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <dnnl.h>

/* key: sizes (15), geometry (9), pass, bias, threads */
#define KEY_LEN 27
typedef struct ventry {
  int64_t key[KEY_LEN];
  uint64_t stamp;
  int used, ok;
  dnnl_primitive_desc_t fwd_pd, pd;
  dnnl_primitive_t conv, rin[2], rout;
  dnnl_memory_desc_t umd[3], cmd[3], bias_md;
  size_t scratch;
} ventry;

#define SLOTS 12
enum { B_A, B_B, B_OUT, B_DW, B_DB, B_SCRATCH, NB };
static struct {
  pthread_mutex_t lock;
  int state;
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  uint64_t clock;
  ventry slots[SLOTS];
  void *buf[NB];
  size_t bufsz[NB];
} vctx = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const int VARGS[3][3] = {{DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                                {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                                {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS}};

static void ventry_clear(ventry *e) {
  if (e->conv) dnnl_primitive_destroy(e->conv);
  for (int i = 0; i < 2; i++)
    if (e->rin[i]) dnnl_primitive_destroy(e->rin[i]);
  if (e->rout) dnnl_primitive_destroy(e->rout);
  if (e->pd) dnnl_primitive_desc_destroy(e->pd);
  if (e->fwd_pd) dnnl_primitive_desc_destroy(e->fwd_pd);
  memset(e, 0, sizeof *e);
}

static dnnl_status_t vreorder_make(dnnl_primitive_t *r, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
  *r = NULL;
  if (dnnl_memory_desc_equal(from, to)) return dnnl_success;
  dnnl_primitive_desc_t pd;
  dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, from, vctx.eng, to, vctx.eng, NULL);
  if (s != dnnl_success) return s;
  s = dnnl_primitive_create(r, pd);
  dnnl_primitive_desc_destroy(pd);
  return s;
}

static dnnl_status_t ventry_make(ventry *e, const int64_t *d, const int *geo, int pass, int bias) {
  dnnl_dims_t xd = {d[0], d[1], d[2], d[3], d[4]}, wd = {d[5], d[6], d[7], d[8], d[9]};
  dnnl_dims_t yd = {d[10], d[11], d[12], d[13], d[14]}, bd = {d[5]};
  dnnl_dims_t st = {geo[0], geo[1], geo[2]}, pl = {geo[3], geo[4], geo[5]};
  dnnl_dims_t dil = {geo[6] - 1, geo[7] - 1, geo[8] - 1}, pr;
  for (int i = 0; i < 3; i++) { /* padding after the input that gives our (floored) output size */
    int64_t p = (d[12 + i] - 1) * geo[i] + (int64_t)geo[6 + i] * (d[7 + i] - 1) + 1 - d[2 + i] - geo[3 + i];
    pr[i] = p > 0 ? p : 0;
  }
  dnnl_memory_desc_t x, y, w, b, ux, uy, uw;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t s;
#define TRY(call)                                \
  do {                                           \
    if ((s = (call)) != dnnl_success) goto done; \
  } while (0)
  TRY(dnnl_memory_desc_init_by_tag(&x, 5, xd, dnnl_f32, dnnl_format_tag_any));
  TRY(dnnl_memory_desc_init_by_tag(&y, 5, yd, dnnl_f32, dnnl_format_tag_any));
  TRY(dnnl_memory_desc_init_by_tag(&w, 5, wd, dnnl_f32, dnnl_format_tag_any));
  TRY(dnnl_memory_desc_init_by_tag(&b, 1, bd, dnnl_f32, dnnl_x));
  TRY(dnnl_memory_desc_init_by_tag(&ux, 5, xd, dnnl_f32, dnnl_ncdhw));
  TRY(dnnl_memory_desc_init_by_tag(&uy, 5, yd, dnnl_f32, dnnl_ncdhw));
  TRY(dnnl_memory_desc_init_by_tag(&uw, 5, wd, dnnl_f32, dnnl_oidhw));
  e->bias_md = b;
  TRY(dnnl_primitive_attr_create(&attr));
  TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  dnnl_convolution_desc_t fd, bdsc;
  TRY(dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &x, &w,
                                                 pass == 0 && bias ? &b : NULL, &y, st, dil, pl, pr));
  TRY(dnnl_primitive_desc_create(&e->fwd_pd, &fd, attr, vctx.eng, NULL));
  if (pass == 0) {
    e->pd = e->fwd_pd, e->fwd_pd = NULL;
  } else {
    if (pass == 1)
      TRY(dnnl_dilated_convolution_backward_data_desc_init(&bdsc, dnnl_convolution_direct, &x, &w, &y, st, dil, pl, pr));
    else
      TRY(dnnl_dilated_convolution_backward_weights_desc_init(&bdsc, dnnl_convolution_direct, &x, &w, bias ? &b : NULL,
                                                              &y, st, dil, pl, pr));
    TRY(dnnl_primitive_desc_create(&e->pd, &bdsc, attr, vctx.eng, e->fwd_pd));
  }
  TRY(dnnl_primitive_create(&e->conv, e->pd));
  const dnnl_memory_desc_t *user[3][3] = {{&ux, &uw, &uy}, {&uy, &uw, &ux}, {&ux, &uy, &uw}};
  for (int i = 0; i < 3; i++) {
    e->umd[i] = *user[pass][i];
    e->cmd[i] = *dnnl_primitive_desc_query_md(e->pd, dnnl_query_exec_arg_md, VARGS[pass][i]);
  }
  TRY(vreorder_make(&e->rin[0], &e->umd[0], &e->cmd[0]));
  TRY(vreorder_make(&e->rin[1], &e->umd[1], &e->cmd[1]));
  TRY(vreorder_make(&e->rout, &e->cmd[2], &e->umd[2]));
  e->scratch = dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(e->pd, dnnl_query_scratchpad_md, 0));
  e->ok = 1;
done:
#undef TRY
  if (attr) dnnl_primitive_attr_destroy(attr);
  return s;
}

static void *vbuf(int i, size_t n) {
  if (n == 0) n = 64;
  if (vctx.bufsz[i] >= n) return vctx.buf[i];
  free(vctx.buf[i]);
  n = (n + 4095) & ~(size_t)4095;
  vctx.buf[i] = aligned_alloc(64, n);
  vctx.bufsz[i] = vctx.buf[i] ? n : 0;
  return vctx.buf[i];
}

static ventry *vlookup(const int64_t *d, const int *geo, int pass, int bias, mt_status *st) {
  int64_t k[KEY_LEN];
  for (int i = 0; i < 15; i++) k[i] = d[i];
  for (int i = 0; i < 9; i++) k[15 + i] = geo[i];
  k[24] = pass, k[25] = bias, k[26] = mt_get_num_threads();
  ventry *e = NULL, *lru = &vctx.slots[0];
  for (int i = 0; i < SLOTS && !e; i++) {
    ventry *s = &vctx.slots[i];
    if (s->used && !memcmp(s->key, k, sizeof k)) e = s;
    if (!s->used || (lru->used && s->stamp < lru->stamp)) lru = s;
  }
  if (!e) {
    e = lru;
    ventry_clear(e);
    memcpy(e->key, k, sizeof k);
    e->used = 1;
    dnnl_status_t s = ventry_make(e, d, geo, pass, bias);
    if (s != dnnl_success) {
      ventry_clear(e);
      memcpy(e->key, k, sizeof k);
      e->used = 1; /* remembered as unimplemented (ok 0) */
      if (s != dnnl_unimplemented) {
        e->used = 0;
        *st = mt__error(s == dnnl_out_of_memory ? MT_ERR_MEMORY : MT_ERR_INTERNAL,
                        OP ": oneDNN could not make the convolution (status %d)", (int)s);
        return NULL;
      }
    }
  }
  e->stamp = ++vctx.clock;
  return e;
}

static dnnl_status_t vexec(dnnl_primitive_t p, int n, const int *arg, dnnl_memory_t *mem) {
  dnnl_exec_arg_t a[6];
  for (int i = 0; i < n; i++) a[i].arg = arg[i], a[i].memory = mem[i];
  dnnl_status_t s = dnnl_primitive_execute(p, vctx.stream, n, a);
  return s == dnnl_success ? dnnl_stream_wait(vctx.stream) : s;
}

static dnnl_status_t vreorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
  static const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
  dnnl_memory_t m[2] = {from, to};
  return vexec(r, 2, arg, m);
}

/* memories 0..2 the caller's a, b, out; 3..5 oneDNN's layouts where they differ; 6 bias; 7 scratch */
static mt_status ventry_run(ventry *e, int pass, float *out, float *out2, const float *a, const float *b,
                            const float *bias_in, float scale, const int64_t *d) {
  const size_t wsz = (size_t)(d[5] * d[6] * d[7] * d[8] * d[9]);
  void *user[3] = {(void *)a, (void *)b, out};
  if (pass == 2) user[2] = vbuf(B_DW, wsz * sizeof(float)); /* then added to out */
  void *side[3];
  for (int i = 0; i < 3; i++) {
    const int r = i < 2 ? e->rin[i] != NULL : e->rout != NULL;
    side[i] = r ? vbuf(B_A + i, dnnl_memory_desc_get_size(&e->cmd[i])) : user[i];
  }
  void *bias = pass == 0 ? (void *)bias_in : pass == 2 && out2 ? vbuf(B_DB, (size_t)d[5] * sizeof(float)) : NULL;
  void *scratch = vbuf(B_SCRATCH, e->scratch);
  for (int i = 0; i < 3; i++)
    if (!user[i] || !side[i]) return mt__error(MT_ERR_MEMORY, OP ": out of memory for oneDNN's buffers");
  if (!scratch || (pass == 2 && out2 && !bias)) return mt__error(MT_ERR_MEMORY, OP ": out of memory for oneDNN's buffers");
  dnnl_memory_t m[8] = {NULL};
  dnnl_status_t s = dnnl_success;
  for (int i = 0; i < 3 && s == dnnl_success; i++) {
    s = dnnl_memory_create(&m[i], &e->umd[i], vctx.eng, user[i]);
    if (s == dnnl_success && side[i] != user[i]) s = dnnl_memory_create(&m[3 + i], &e->cmd[i], vctx.eng, side[i]);
  }
  if (s == dnnl_success && bias) s = dnnl_memory_create(&m[6], &e->bias_md, vctx.eng, bias);
  if (s == dnnl_success)
    s = dnnl_memory_create(&m[7], dnnl_primitive_desc_query_md(e->pd, dnnl_query_scratchpad_md, 0), vctx.eng, scratch);
  for (int i = 0; i < 2 && s == dnnl_success; i++)
    if (e->rin[i]) s = vreorder(e->rin[i], m[i], m[3 + i]);
  if (s == dnnl_success) {
    int arg[5] = {VARGS[pass][0], VARGS[pass][1], VARGS[pass][2], DNNL_ARG_SCRATCHPAD,
                  pass == 0 ? DNNL_ARG_BIAS : DNNL_ARG_DIFF_BIAS};
    dnnl_memory_t cm[5] = {m[3] ? m[3] : m[0], m[4] ? m[4] : m[1], m[5] ? m[5] : m[2], m[7], m[6]};
    s = vexec(e->conv, bias ? 5 : 4, arg, cm);
  }
  if (s == dnnl_success && e->rout) s = vreorder(e->rout, m[5], m[2]);
  for (int i = 0; i < 8; i++)
    if (m[i]) dnnl_memory_destroy(m[i]);
  if (s != dnnl_success) return mt__error(MT_ERR_INTERNAL, OP ": oneDNN failed to run the convolution (status %d)", (int)s);
  if (pass == 2) { /* accumulate, as the vol2col path does */
    const float *dw = user[2], *db = bias;
#pragma omp parallel for if (wsz > 65536) schedule(static)
    for (size_t i = 0; i < wsz; i++) out[i] += scale * dw[i];
    if (out2)
      for (int64_t o = 0; o < d[5]; o++) out2[o] += scale * db[o];
  }
  return MT_OK;
}

static mt_status vol_dnn_run(int pass, float *out, float *out2, const float *a, const float *b, const float *bias,
                             float scale, const int64_t *d, const int *geo, int *ran) {
  const int hasb = pass == 0 ? bias != NULL : pass == 2 && out2 != NULL;
  mt_status st = MT_OK;
  pthread_mutex_lock(&vctx.lock);
  if (vctx.state == 0)
    vctx.state = dnnl_engine_create(&vctx.eng, dnnl_cpu, 0) == dnnl_success &&
                         dnnl_stream_create(&vctx.stream, vctx.eng, dnnl_stream_default_flags) == dnnl_success
                     ? 1
                     : -1;
  if (vctx.state == 1) {
    ventry *e = vlookup(d, geo, pass, hasb, &st);
    if (e && e->ok) {
      st = ventry_run(e, pass, out, out2, a, b, bias, scale, d);
      *ran = st == MT_OK;
    }
  }
  pthread_mutex_unlock(&vctx.lock);
  return st;
}
#else
static mt_status vol_dnn_run(int pass, float *out, float *out2, const float *a, const float *b, const float *bias,
                             float scale, const int64_t *d, const int *geo, int *ran) {
  return MT_OK;
}
#endif

mt_status mt_nn_conv3d_onednn(int pass, mt_tensor *out, mt_tensor *out2, const mt_tensor *a, const mt_tensor *b,
                              const mt_tensor *bias, double scale, int dT, int dW, int dH, int padT, int padW,
                              int padH, int dilT, int dilW, int dilH, int *ran) {
  if (!ran) return mt__error(MT_ERR_ARG, OP ": ran is NULL");
  *ran = 0;
  if (pass < 0 || pass > 2) return mt__error(MT_ERR_ARG, OP ": pass %d is not 0, 1 or 2", pass);
  const int geo[9] = {dT, dH, dW, padT, padH, padW, dilT, dilH, dilW};
  int64_t d[15];
  if (pass == 0) { /* the forward sizes its output */
    if (!out || !a || !b) return mt__error(MT_ERR_ARG, OP ": an operand is NULL");
    if (a->ndim != 5 || b->ndim != 5) return mt__error(MT_ERR_SHAPE, OP ": oneDNN takes 5-d input and weight");
    int64_t osz[5] = {a->sizes[0], b->sizes[0], 1, 1, 1};
    for (int i = 0; i < 3; i++) {
      int64_t e = (int64_t)geo[6 + i] * (b->sizes[2 + i] - 1) + 1, n = a->sizes[2 + i] + 2 * geo[3 + i];
      if (geo[i] < 1 || geo[6 + i] < 1 || geo[3 + i] < 0 || n < e)
        return mt__error(MT_ERR_SHAPE, OP ": the kernel does not fit the padded input");
      osz[2 + i] = (n - e) / geo[i] + 1;
    }
    MT_TRY(mt__prepare_out(out, MT_F32, MT_CPU, 5, osz, OP));
  }
  MT_TRY(vol_dnn_check(pass, out, a, b, d, geo));
  if (bias && (bias->ndim != 1 || bias->sizes[0] != d[5] || bias->dtype != MT_F32 || bias->device != MT_CPU ||
               !mt__is_contiguous(bias)))
    return mt__error(MT_ERR_ARG, OP ": bias must be a contiguous float32 CPU vector of %lld", (long long)d[5]);
  if (out2 && (out2->ndim != 1 || out2->sizes[0] != d[5] || out2->dtype != MT_F32 || out2->device != MT_CPU ||
               !mt__is_contiguous(out2)))
    return mt__error(MT_ERR_ARG, OP ": gradBias must be a contiguous float32 CPU vector of %lld", (long long)d[5]);
  if (d[0] == 0) return MT_OK;
  return vol_dnn_run(pass, (float *)mt__data(out), out2 ? (float *)mt__data(out2) : NULL, (const float *)mt__data(a),
                     (const float *)mt__data(b), bias ? (const float *)mt__data(bias) : NULL, (float)scale, d, geo, ran);
}
