/* ps_server.c: one parameter server. The state machine (push, clock, apply, init, whether a
 * pull may be answered) is plain calls, which ps.c makes in-process when there is one rank;
 * with MPI a thread beside the worker serves it: it takes one request at a time from `req`,
 * holds back pulls the staleness bound does not yet allow, and answers on `rep` with
 * non-blocking sends of a copy of the shard as it was, so pushes and steps go on meanwhile. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <sched.h>
#include <time.h>
#include "ps.h"

void mt__ps_shard(const mt_ps *ps, int k, int64_t *lo, int64_t *n) {
  int64_t a = ps->numel / ps->servers * k + (ps->numel % ps->servers) * k / ps->servers;
  int64_t b = ps->numel / ps->servers * (k + 1) + (ps->numel % ps->servers) * (k + 1) / ps->servers;
  *lo = a;
  *n = b - a;
}

static mt_status fail(mt_ps_server *s, const char *fmt, ...) MT_PRINTF(2, 3);
static mt_status fail(mt_ps_server *s, const char *fmt, ...) {
  char buf[sizeof s->error - 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  snprintf(s->error, sizeof s->error, "parameter server %d: %s", s->index, buf);
  return mt__error(MT_ERR_DIST, "%s", s->error);
}

void mt__ps_server_free(mt_ps_server *s) {
  if (!s) return;
  if (s->params) mt_tensor_release(s->params);
  if (s->momentum) mt_tensor_release(s->momentum);
  if (s->accum) mt_tensor_release(s->accum);
  free(s->lr);
  free(s->alpha);
  free(s->clock);
  free(s);
}

mt_status mt__ps_server_new(mt_ps *ps, int index, mt_ps_server **out) {
  *out = NULL;
  mt_ps_server *s = calloc(1, sizeof *s);
  if (!s) return mt__error(MT_ERR_MEMORY, "dist.ParameterServer: out of memory");
  s->index = index;
  s->workers = ps->workers;
  s->staleness = ps->staleness;
  mt__ps_shard(ps, index, &s->lo, &s->n);
  s->mom = ps->mom;
  s->dampening = ps->dampening;
  s->weight_decay = ps->weight_decay;
  s->nesterov = ps->nesterov;
  s->lookahead = ps->lookahead;
  s->lr = calloc((size_t)ps->staleness + 1, sizeof *s->lr);
  s->alpha = malloc(sizeof *s->alpha * ((size_t)ps->staleness + 1));
  for (int k = 0; s->alpha && k <= ps->staleness; k++) s->alpha[k] = -1;
  s->clock = calloc((size_t)ps->workers, sizeof *s->clock);
  int64_t one[1] = {s->n}, slots[2] = {ps->staleness + 1, s->n};
  mt_status st =
      (s->lr && s->alpha && s->clock) ? MT_OK : mt__error(MT_ERR_MEMORY, "dist.ParameterServer: out of memory");
  if (st == MT_OK) st = mt_tensor_new(&s->params, MT_F32, -1, 1, one);
  if (st == MT_OK) st = mt_tensor_new(&s->accum, MT_F64, -1, 2, slots);
  if (st == MT_OK && s->mom != 0) st = mt_tensor_new(&s->momentum, MT_F32, -1, 1, one);
  if (st == MT_OK) st = mt_fill(s->params, 0);
  if (st == MT_OK) st = mt_fill(s->accum, 0);
  if (st == MT_OK && s->momentum) st = mt_fill(s->momentum, 0);
  if (st != MT_OK) {
    mt__ps_server_free(s);
    return st;
  }
  *out = s;
  return MT_OK;
}

static double *slot_of(mt_ps_server *s, int64_t clock) {
  return (double *)mt_tensor_data(s->accum) + (clock % (s->staleness + 1)) * s->n;
}

static mt_status check_range(mt_ps_server *s, const char *what, const mt_ps_msg *h) {
  if (h->count < 0 || h->offset < s->lo || h->offset + h->count > s->lo + s->n)
    return fail(s, "a %s of elements [%lld, %lld) is outside the shard [%lld, %lld)", what, (long long)h->offset,
                (long long)(h->offset + h->count), (long long)s->lo, (long long)(s->lo + s->n));
  return MT_OK;
}

/* what multiplies a clock's mean gradient in its update: optim.sgd's step is
 * v = started ? m v + (1 - d) g : g and x -= lr (nesterov ? g + m v : v) */
static double coefficient(const mt_ps_server *s) {
  if (s->mom == 0) return 1;
  if (s->nesterov) return 1 + s->mom;
  return s->momentum_started ? 1 - s->dampening : 1;
}

mt_status mt__ps_server_push(mt_ps_server *s, const mt_ps_msg *h, const float *data) {
  MT_TRY(check_range(s, "push", h));
  if (h->generation != s->generation)
    return fail(s, "a push of generation %lld arrived at generation %lld", (long long)h->generation,
                (long long)s->generation);
  if (h->clock < s->version || h->clock > s->version + s->staleness)
    return fail(s, "a push for clock %lld arrived at version %lld: only clocks %lld..%lld are open",
                (long long)h->clock, (long long)s->version, (long long)s->version,
                (long long)(s->version + s->staleness));
  int64_t slot = h->clock % (s->staleness + 1);
  double *sum = slot_of(s, h->clock) + (h->offset - s->lo);
  for (int64_t i = 0; i < h->count; i++) sum[i] += data[i];
  if (s->staleness > 0) {
    /* Bösen's eager propagation: the push shows in the shard at once, stepped with the last
     * clock's rate and this step's gradient coefficient (fixed per clock at its first push, so
     * that the clock's own step can take exactly this much back out) */
    if (s->alpha[slot] < 0) s->alpha[slot] = s->lr_last * coefficient(s);
    float *p = (float *)mt_tensor_data(s->params) + (h->offset - s->lo);
    float a = (float)(s->alpha[slot] / s->workers);
    for (int64_t i = 0; i < h->count; i++) p[i] -= a * data[i];
  }
  return MT_OK;
}

mt_status mt__ps_server_clock(mt_ps_server *s, int worker, const mt_ps_msg *h) {
  if (worker < 0 || worker >= s->workers) return fail(s, "a clock message from rank %d (not a worker)", worker);
  if (h->clock != s->clock[worker] + 1)
    return fail(s, "worker %d says it reached clock %lld, but it was at %lld", worker, (long long)h->clock,
                (long long)s->clock[worker]);
  if (worker == 0) s->lr[(h->clock - 1) % (s->staleness + 1)] = h->value;
  s->clock[worker] = h->clock;
  return MT_OK;
}

int mt__ps_server_complete(const mt_ps_server *s) {
  for (int w = 0; w < s->workers; w++)
    if (s->clock[w] <= s->version) return 0;
  return 1;
}

mt_status mt__ps_server_apply(mt_ps_server *s) {
  /* optim.sgd's step on the clock's mean gradient g (+ weight decay), in float64, less what
   * the eager pushes of this clock already took off (alpha g) */
  int64_t slot = s->version % (s->staleness + 1);
  double *sum = slot_of(s, s->version), inv = 1.0 / s->workers, lr = s->lr[slot];
  double m = s->mom, keep = 1 - s->dampening, wd = s->weight_decay;
  double eager = s->alpha[slot] > 0 ? s->alpha[slot] : 0;
  float *p = mt_tensor_data(s->params), *v = s->momentum ? mt_tensor_data(s->momentum) : NULL;
  int started = s->momentum_started, nesterov = s->nesterov;
  for (int64_t i = 0; i < s->n; i++) {
    double g = sum[i] * inv, step = g + wd * p[i];
    if (v) {
      double vi = started ? m * v[i] + keep * step : step;
      v[i] = (float)vi;
      step = nesterov ? step + m * vi : vi;
    }
    p[i] = (float)(p[i] - (lr * step - eager * g));
    sum[i] = 0;
  }
  if (s->momentum) s->momentum_started = 1;
  s->alpha[slot] = -1;
  s->lr_last = lr;
  s->version++;
  return MT_OK;
}

mt_status mt__ps_server_init(mt_ps_server *s, const mt_ps_msg *h) {
  s->version = h->clock;
  for (int w = 0; w < s->workers; w++) s->clock[w] = h->clock;
  memset(mt_tensor_data(s->accum), 0, sizeof(double) * (size_t)s->n * (size_t)(s->staleness + 1));
  for (int k = 0; k <= s->staleness; k++) s->alpha[k] = -1;
  s->lr_last = h->value;
  s->momentum_started = s->momentum && h->need;
  s->generation = h->generation;
  return MT_OK;
}

/* A worker at clock c reading version v < c computes its gradient on parameters c - v steps
 * behind the ones it will be applied to. The eager pushes already show those clocks'
 * gradients; with momentum most of each step is the velocity's carry-over, known now. So the
 * read moves on by that part of the c - v steps, the velocity decaying by m per step (the look-
 * ahead of DANA, Hakimi et al. 2019): heavy ball steps by m^j v, Nesterov by m^(j+1) v. */
void mt__ps_server_read(const mt_ps_server *s, int64_t clock, int64_t offset, int64_t count, float *out) {
  const float *p = (const float *)mt_tensor_data(s->params) + (offset - s->lo);
  int64_t gap = clock - s->version;
  if (!s->lookahead || !s->momentum || !s->momentum_started || gap <= 0) {
    memcpy(out, p, sizeof(float) * (size_t)count);
    return;
  }
  double factor = 0, power = s->nesterov ? s->mom : 1;
  for (int64_t j = 1; j <= gap; j++) {
    power *= s->mom;
    factor += power;
  }
  const float *v = (const float *)mt_tensor_data(s->momentum) + (offset - s->lo);
  float f = (float)(s->lr_last * factor);
  for (int64_t i = 0; i < count; i++) out[i] = p[i] - f * v[i];
}

mt_status mt__ps_server_ready(mt_ps_server *s, const mt_ps_msg *h, int *ready) {
  MT_TRY(check_range(s, "pull", h));
  *ready = h->generation <= s->generation && s->version >= h->need;
  return MT_OK;
}

#ifdef MT_WITH_MPI
/* ---- the serving thread ---- */
typedef struct held {
  mt_ps_msg h;
  int src, tag;
  double since;
} held;

typedef struct answer {
  mt_ps_msg h;
  MPI_Request r[3];
  float data[]; /* what is sent: the parameters (and momentum) as they were */
} answer;

typedef struct loop {
  mt_ps *ps;
  mt_ps_server *s;
  held *held;
  int nheld, capheld;
  answer **out;
  int nout, capout;
  float *scratch;
  int64_t scratch_n;
  unsigned idle;
} loop;

static int stopped(const loop *L) { return L->ps->abort || L->ps->d->broken; }

/* Nothing to do: yield a few times, then sleep in growing steps up to 200 us, so an idle
 * server neither spins on a core the workers need nor answers late by more than that. */
static void idle_wait(loop *L) {
  if (L->idle < 32) {
    sched_yield();
  } else {
    unsigned us = L->idle < 40 ? 10u << (L->idle - 32) / 2 : 200u;
    struct timespec ts = {0, (long)(us < 200 ? us : 200) * 1000};
    nanosleep(&ts, NULL);
  }
  L->idle++;
}

static void progress_out(loop *L) {
  for (int i = 0; i < L->nout;) {
    int done = 0;
    MPI_Testall(3, L->out[i]->r, &done, MPI_STATUSES_IGNORE);
    if (done) {
      free(L->out[i]);
      L->out[i] = L->out[--L->nout];
    } else {
      i++;
    }
  }
}

/* every answer sent (before the thread ends) */
static mt_status drain(loop *L) {
  L->idle = 0;
  for (progress_out(L); L->nout > 0; progress_out(L)) {
    if (stopped(L)) return mt__error(MT_ERR_DIST, "parameter server %d: stopped", L->s->index);
    idle_wait(L);
  }
  return MT_OK;
}

/* the data message that follows a header from src */
static mt_status receive(loop *L, void *buf, int64_t count, int src, int tag) {
  MPI_Request r;
  if (MPI_Irecv(buf, (int)count, MPI_FLOAT, src, tag, L->ps->req, &r) != MPI_SUCCESS)
    return fail(L->s, "cannot receive from rank %d", src);
  L->idle = 0;
  for (;;) {
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return MT_OK;
    if (stopped(L)) {
      mt__dist_cancel(&r, 1);
      return mt__error(MT_ERR_DIST, "parameter server %d: stopped", L->s->index);
    }
    idle_wait(L);
  }
}

static mt_status send_answer(loop *L, const held *q) {
  mt_ps_server *s = L->s;
  mt_ps *ps = L->ps;
  if (L->nout == L->capout) {
    int cap = L->capout ? 2 * L->capout : 16;
    answer **p = realloc(L->out, sizeof *p * (size_t)cap);
    if (!p) return fail(s, "out of memory");
    L->out = p;
    L->capout = cap;
  }
  /* the answer carries a copy: the shard goes on changing (eager pushes, steps) while it is sent */
  int mom = q->tag == MT_PS_GATHER && s->momentum;
  int64_t n = q->h.count;
  answer *a = malloc(sizeof *a + sizeof(float) * (size_t)(n * (1 + mom)));
  if (!a) return fail(s, "out of memory");
  a->h = (mt_ps_msg){.clock = s->version,
                     .offset = q->h.offset,
                     .count = n,
                     .generation = s->generation,
                     .need = s->momentum_started,
                     .value = q->since > 0 ? mt__dist_now() - q->since : 0};
  a->r[0] = a->r[1] = a->r[2] = MPI_REQUEST_NULL;
  if (q->tag == MT_PS_PULL) mt__ps_server_read(s, q->h.clock, q->h.offset, n, a->data);
  else memcpy(a->data, (const float *)mt_tensor_data(s->params) + (q->h.offset - s->lo), sizeof(float) * (size_t)n);
  if (mom)
    memcpy(a->data + n, (const float *)mt_tensor_data(s->momentum) + (q->h.offset - s->lo), sizeof(float) * (size_t)n);
  int ok = MPI_SUCCESS;
  ok |= MPI_Isend(&a->h, sizeof a->h, MPI_BYTE, q->src, MT_PS_REPLY, ps->rep, &a->r[0]);
  ok |= MPI_Isend(a->data, (int)n, MPI_FLOAT, q->src, MT_PS_DATA, ps->rep, &a->r[1]);
  if (mom) ok |= MPI_Isend(a->data + n, (int)n, MPI_FLOAT, q->src, MT_PS_MOMENTUM, ps->rep, &a->r[2]);
  L->out[L->nout++] = a;
  if (ok != MPI_SUCCESS) return fail(s, "cannot answer rank %d", q->src);
  return MT_OK;
}

/* answers every held request the new version allows */
static mt_status answer_held(loop *L) {
  for (int i = 0; i < L->nheld;) {
    int ready = 0;
    MT_TRY(mt__ps_server_ready(L->s, &L->held[i].h, &ready));
    if (ready) {
      MT_TRY(send_answer(L, &L->held[i]));
      L->held[i] = L->held[--L->nheld];
    } else {
      i++;
    }
  }
  return MT_OK;
}

static mt_status request(loop *L, const mt_ps_msg *h, int src, int tag) {
  held q = {*h, src, tag, 0};
  int ready = 0;
  MT_TRY(mt__ps_server_ready(L->s, h, &ready));
  if (ready) return send_answer(L, &q);
  if (L->nheld == L->capheld) {
    int cap = L->capheld ? 2 * L->capheld : 16;
    held *p = realloc(L->held, sizeof *p * (size_t)cap);
    if (!p) return fail(L->s, "out of memory");
    L->held = p;
    L->capheld = cap;
  }
  q.since = mt__dist_now();
  L->held[L->nheld++] = q;
  return MT_OK;
}

static mt_status handle(loop *L, const mt_ps_msg *h, int src, int tag, int *stops) {
  mt_ps_server *s = L->s;
  switch (tag) {
    case MT_PS_PUSH:
      MT_TRY(check_range(s, "push", h));
      if (h->count > L->scratch_n) {
        float *p = realloc(L->scratch, sizeof(float) * (size_t)h->count);
        if (!p) return fail(s, "out of memory for a push of %lld elements", (long long)h->count);
        L->scratch = p;
        L->scratch_n = h->count;
      }
      MT_TRY(receive(L, L->scratch, h->count, src, MT_PS_DATA));
      return mt__ps_server_push(s, h, L->scratch);
    case MT_PS_CLOCK:
      MT_TRY(mt__ps_server_clock(s, src, h));
      if (!mt__ps_server_complete(s)) return MT_OK;
      while (mt__ps_server_complete(s)) MT_TRY(mt__ps_server_apply(s));
      return answer_held(L);
    case MT_PS_PULL:
    case MT_PS_GATHER: return request(L, h, src, tag);
    case MT_PS_INIT:
      if (h->count != s->n)
        return fail(s, "an init of %lld elements for a shard of %lld", (long long)h->count, (long long)s->n);
      if (h->need && !s->momentum) return fail(s, "an init with momentum for a table without");
      MT_TRY(receive(L, mt_tensor_data(s->params), s->n, src, MT_PS_DATA));
      if (h->need) MT_TRY(receive(L, mt_tensor_data(s->momentum), s->n, src, MT_PS_MOMENTUM));
      MT_TRY(mt__ps_server_init(s, h));
      return answer_held(L);
    case MT_PS_STOP: (*stops)++; return MT_OK;
    default: return fail(s, "an unknown request (tag %d) from rank %d", tag, src);
  }
}

static mt_status serve_loop(loop *L) {
  mt_ps *ps = L->ps;
  mt_ps_msg h;
  MPI_Request in = MPI_REQUEST_NULL;
  MPI_Status st;
  int stops = 0;
  while (stops < ps->workers) {
    /* one header at a time: the data that follow it are received with their own tag before
     * the next header receive is posted, which would otherwise match them first */
    if (in == MPI_REQUEST_NULL &&
        MPI_Irecv(&h, sizeof h, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, ps->req, &in) != MPI_SUCCESS)
      return fail(L->s, "cannot post a receive");
    int got = 0;
    MPI_Test(&in, &got, &st);
    progress_out(L);
    if (stopped(L)) {
      mt__dist_cancel(&in, 1);
      return MT_OK;
    }
    if (!got) {
      idle_wait(L);
      continue;
    }
    L->idle = 0;
    mt_ps_msg m = h;
    MT_TRY(handle(L, &m, st.MPI_SOURCE, st.MPI_TAG, &stops));
  }
  return drain(L);
}

static void *serve(void *arg) {
  mt_ps *ps = arg;
  mt_set_num_threads(1); /* a shard's step is memory-bound; the worker's compute keeps the cores */
  loop L = {.ps = ps, .s = ps->server};
  mt_status st = serve_loop(&L);
  if (st != MT_OK && !stopped(&L)) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mt_last_error());
    mt_dist_fail(ps->d, msg); /* breaks this rank's communicator; every other rank hears it at once */
  }
  for (int i = 0; i < L.nout; i++) {
    mt__dist_cancel(L.out[i]->r, 3);
    free(L.out[i]);
  }
  free(L.out);
  free(L.held);
  free(L.scratch);
  ps->thread_done = 1;
  return NULL;
}

mt_status mt__ps_server_start(mt_ps *ps) {
  if (pthread_create(&ps->thread, NULL, serve, ps) != 0)
    return mt__error(MT_ERR_INTERNAL, "dist.ParameterServer: cannot start the server thread");
  ps->thread_started = 1;
  return MT_OK;
}
#endif
