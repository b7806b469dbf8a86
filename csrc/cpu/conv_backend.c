/* conv_backend.c: which implementation runs a float32 CPU convolution (torch.convBackend):
 * 'native' (im2col + GEMM or Winograd, nn_conv.c), 'onednn' / 'onednn_nchw' (onednn_conv.c's
 * two layout variants) or 'auto', which
 * times the native kernels and oneDNN's two layout variants once per shape and pass, like
 * cuDNN's algorithm search, and keeps the fastest.
 *
 * Why global state: the setting describes how a whole run computes, like the CUDA backend's
 * convAlgorithm (csrc/cuda/settings.c) and PyTorch's torch.backends.mkldnn.enabled; it is read
 * with a relaxed atomic. The choices 'auto' made are a bounded cache (SLOTS, replaced in turn:
 * a lost choice is only timed again) under a mutex, since the CPU op table has no context to
 * hang them on. */
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "onednn_conv.h"
#include "../core/error.h"
#include "../moontorch.h"

/* mt_conv_backend. NATIVE by default: 'auto' chooses by timing, so two runs may round
 * differently, and resuming a run must end bit for bit where the whole run ends */
static atomic_int backend_mode = MT_CONV_BACKEND_NATIVE;

int mt_cpu_onednn_available(void) { return mt__onednn_available(); }

mt_status mt_cpu_set_conv_backend(int backend, int *previous) {
  const char *op = "convBackend";
  if (backend < MT_CONV_BACKEND_AUTO || backend > MT_CONV_BACKEND_ONEDNN_NCHW)
    return mt__error(MT_ERR_ARG, "%s: backend %d is none of auto (%d), native (%d), onednn (%d), onednn_nchw (%d)", op,
                     backend, MT_CONV_BACKEND_AUTO, MT_CONV_BACKEND_NATIVE, MT_CONV_BACKEND_ONEDNN,
                     MT_CONV_BACKEND_ONEDNN_NCHW);
  if (backend >= MT_CONV_BACKEND_ONEDNN && !mt__onednn_available())
    return mt__error(MT_ERR_UNSUPPORTED, "%s: this build has no oneDNN (install libdnnl-dev and rebuild)", op);
  int old = atomic_exchange_explicit(&backend_mode, backend, memory_order_relaxed);
  if (previous) *previous = old;
  return MT_OK;
}

int mt_cpu_get_conv_backend(void) { return atomic_load_explicit(&backend_mode, memory_order_relaxed); }

/* Below this many multiply-adds 'auto' keeps the native kernels without timing: oneDNN's fixed
 * costs (reorders, primitive creation) dominate there, and a test suite's many small shapes would
 * each pay for a search. */
#define AUTO_MIN_MACS 4e6

#define KEY_LEN 20
#define SLOTS 256
static struct {
  pthread_mutex_t lock;
  int next;
  struct {
    int64_t key[KEY_LEN];
    int choice; /* 1 + the choice (CHOICE_NATIVE or 1 + a oneDNN variant); 0: empty */
  } slot[SLOTS];
} choices = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void make_key(int64_t *k, const mt__conv_call *c, const mt_conv_geom *g) {
  const int bias = c->dir == MT__CONV_FWD ? c->bias != NULL : c->out2 != NULL;
  const int64_t v[KEY_LEN] = {g->N,  g->C,  g->H,  g->W,  g->O,  g->Cg, g->kH,     g->kW,  g->oH, g->oW,
                              g->sW, g->sH, g->pW, g->pH, g->dW, g->dH, g->groups, c->dir, bias,  mt_get_num_threads()};
  memcpy(k, v, sizeof v);
}

/* the choice made for key k, -1 if none yet */
static int choice_get(const int64_t *k) {
  int r = -1;
  pthread_mutex_lock(&choices.lock);
  for (int i = 0; i < SLOTS && r < 0; i++)
    if (choices.slot[i].choice && !memcmp(choices.slot[i].key, k, sizeof choices.slot[i].key))
      r = choices.slot[i].choice - 1;
  pthread_mutex_unlock(&choices.lock);
  return r;
}

static void choice_put(const int64_t *k, int choice) {
  pthread_mutex_lock(&choices.lock);
  int i = choices.next;
  choices.next = (i + 1) % SLOTS;
  memcpy(choices.slot[i].key, k, sizeof choices.slot[i].key);
  choices.slot[i].choice = choice + 1; /* stored +1: a zeroed slot is empty */
  pthread_mutex_unlock(&choices.lock);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* The candidates 'auto' times: CHOICE_NATIVE, or oneDNN in layout variant (choice - 1). */
enum { CHOICE_NATIVE = 0, NCHOICE = 3 };

static mt_status run_choice(const mt__conv_call *c, const mt_conv_geom *g, mt__conv_native_fn native, int choice,
                            int *ran) {
  *ran = 1;
  if (choice == CHOICE_NATIVE) return native(c, g);
  return mt__onednn_conv(c, g, choice - 1, ran);
}

/* 'auto' on a new shape: times each candidate (oneDNN after one untimed call, which makes its
 * primitive), the fastest of two calls each, on scratch outputs (the gradWeight pass
 * accumulates, so it must not run into the caller's twice); *choice: the fastest. */
static mt_status search(const mt__conv_call *c, const mt_conv_geom *g, mt__conv_native_fn native, int *choice) {
  const int64_t wsz = g->O * g->Cg * g->kH * g->kW;
  const int64_t n = c->dir == MT__CONV_FWD        ? g->N * g->O * g->oH * g->oW
                    : c->dir == MT__CONV_BWD_DATA ? g->N * g->C * g->H * g->W
                                                  : wsz + g->O;
  float *tmp = calloc((size_t)n, sizeof(float));
  if (!tmp) return mt__error(MT_ERR_MEMORY, "SpatialConvolution: out of memory timing oneDNN against native");
  mt__conv_call t = *c;
  t.out = tmp;
  if (c->dir == MT__CONV_BWD_WEIGHTS && c->out2) t.out2 = tmp + wsz;
  double best[NCHOICE];
  int ran[NCHOICE] = {0};
  mt_status st = MT_OK;
  for (int k = 1; k < NCHOICE && st == MT_OK; k++) st = run_choice(&t, g, native, k, &ran[k]);
  ran[CHOICE_NATIVE] = 1;
  for (int k = 0; k < NCHOICE; k++) best[k] = 1e30;
  for (int rep = 0; rep < 2 && st == MT_OK; rep++)
    for (int k = 0; k < NCHOICE && st == MT_OK; k++) {
      if (!ran[k]) continue;
      double t0 = now();
      st = run_choice(&t, g, native, k, &ran[k]);
      double dt = now() - t0;
      if (dt < best[k]) best[k] = dt;
    }
  free(tmp);
  *choice = CHOICE_NATIVE;
  for (int k = 1; k < NCHOICE; k++)
    if (ran[k] && best[k] < best[*choice]) *choice = k;
  return st;
}

mt_status mt__conv_f32(const mt__conv_call *c, const mt_conv_geom *g, mt__conv_native_fn native) {
  const int mode = atomic_load_explicit(&backend_mode, memory_order_relaxed);
  if (mode == MT_CONV_BACKEND_NATIVE || !mt__onednn_available()) return native(c, g);
  int choice = 1 + (mode == MT_CONV_BACKEND_ONEDNN_NCHW ? MT__ONEDNN_NCHW : MT__ONEDNN_BLOCKED);
  if (mode == MT_CONV_BACKEND_AUTO) {
    int64_t k[KEY_LEN];
    make_key(k, c, g);
    double macs = (double)g->N * g->O * g->oH * g->oW * g->Cg * g->kH * g->kW;
    choice = macs < AUTO_MIN_MACS ? CHOICE_NATIVE : choice_get(k);
    if (choice < 0) {
      MT_TRY(search(c, g, native, &choice));
      choice_put(k, choice);
    }
  }
  int ran;
  MT_TRY(run_choice(c, g, native, choice, &ran));
  return ran ? MT_OK : native(c, g); /* oneDNN has no implementation for this shape */
}
