/* ps.c: the parameter server's public calls. Each checks its arguments in the caller, fixes
 * the request's numbers (this worker's clock and generation at issue) and queues a work item;
 * the communication thread then runs the worker's side of it here: the messages to the
 * servers whose shards the request touches, and the wait for their answers, through wait.c,
 * so a dead or silent server ends the wait naming its rank. With one rank the server is in
 * this process and the same requests are plain calls. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <limits.h>
#include "ps.h"

#define NAME "dist.ParameterServer"

enum { PS_OPEN = 100, PS_CLOSE = 101 }; /* work-only ops beside the wire's MT_PS_* */

static const char *op_name(int op) {
  switch (op) {
    case PS_OPEN: return "open";
    case PS_CLOSE: return "close";
    case MT_PS_PUSH: return "push";
    case MT_PS_CLOCK: return "clock";
    case MT_PS_PULL: return "pull";
    case MT_PS_INIT: return "init";
    case MT_PS_GATHER: return "gather";
    default: return "?";
  }
}

static mt_status new_work(mt_ps *ps, const char *what, int op, mt_dist_work **out) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":%s: the table is NULL", what);
  mt_dist *d = ps->d;
  if (ps->closed) return mt__error(MT_ERR_ARG, NAME ":%s: the table is closed", what);
  if (d->finalized) return mt__error(MT_ERR_DIST, NAME ":%s: the communicator is finalized", what);
  if (d->broken) return mt__error(MT_ERR_DIST, NAME ":%s: the communicator is broken: %s", what, d->broken_msg);
  mt_dist_work *w = calloc(1, sizeof *w);
  if (!w) return mt__error(MT_ERR_MEMORY, NAME ":%s: out of memory", what);
  w->kind = MT_WORK_PS;
  w->ps.ps = ps;
  w->ps.op = op;
  w->ps.clock = ps->clock;
  w->ps.generation = ps->generation;
  *out = w;
  return MT_OK;
}

static mt_status check_flat(const char *what, const char *name, const mt_tensor *t) {
  if (!t) return mt__error(MT_ERR_ARG, NAME ":%s: %s is NULL", what, name);
  if (mt_tensor_dtype(t) != MT_F32)
    return mt__error(MT_ERR_DTYPE, NAME ":%s: %s must be float32, got %s", what, name,
                     mt_dtype_name(mt_tensor_dtype(t)));
  if (mt_tensor_device(t) >= 0)
    return mt__error(MT_ERR_DEVICE, NAME ":%s: %s must be a CPU tensor, got one on CUDA device %d", what, name,
                     mt_tensor_device(t));
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_ARG, NAME ":%s: %s must be contiguous", what, name);
  return MT_OK;
}

static mt_status check_table(const mt_ps *ps, const char *what, const char *name, const mt_tensor *t) {
  MT_TRY(check_flat(what, name, t));
  if (mt_tensor_numel(t) != ps->numel)
    return mt__error(MT_ERR_SHAPE, NAME ":%s: %s has %lld elements, the table %lld", what, name,
                     (long long)mt_tensor_numel(t), (long long)ps->numel);
  return MT_OK;
}

mt_status mt_ps_open(mt_dist *d, int64_t numel, int servers, int staleness, double momentum, double dampening,
                     double weight_decay, int nesterov, int lookahead, mt_ps **out) {
  if (!out) return mt__error(MT_ERR_ARG, NAME ": out is NULL");
  *out = NULL;
  if (!d) return mt__error(MT_ERR_ARG, NAME ": dist.init() was not called");
  if (numel < 0) return mt__error(MT_ERR_ARG, NAME ": numel must be >= 0, got %lld", (long long)numel);
  if (servers < 1 || servers > d->size)
    return mt__error(MT_ERR_ARG, NAME ": servers must be 1..%d (each runs beside a worker rank), got %d", d->size,
                     servers);
  if (numel / servers + 1 > INT_MAX)
    return mt__error(MT_ERR_UNSUPPORTED,
                     NAME
                     ": %lld elements over %d servers is more than one MPI message carries per shard; use more servers",
                     (long long)numel, servers);
  if (staleness < 0 || staleness > 1000)
    return mt__error(MT_ERR_ARG, NAME ": staleness must be 0..1000 clocks, got %d", staleness);
  if (!(momentum >= 0) || !(weight_decay >= 0) || !(dampening >= 0))
    return mt__error(MT_ERR_ARG, NAME ": momentum, dampening and weightDecay must be >= 0 (got %g, %g, %g)", momentum,
                     dampening, weight_decay);
  if (nesterov && !(momentum > 0 && dampening == 0))
    return mt__error(MT_ERR_ARG, NAME ": Nesterov momentum needs momentum > 0 and dampening 0 (got %g, %g)", momentum,
                     dampening);
  mt_ps *ps = calloc(1, sizeof *ps);
  if (!ps || !(ps->last_version = calloc((size_t)servers, sizeof *ps->last_version))) {
    free(ps);
    return mt__error(MT_ERR_MEMORY, NAME ": out of memory");
  }
  ps->d = d;
  ps->numel = numel;
  ps->servers = servers;
  ps->workers = d->size;
  ps->staleness = staleness;
  ps->mom = momentum;
  ps->dampening = dampening;
  ps->weight_decay = weight_decay;
  ps->nesterov = nesterov != 0;
  ps->lookahead = lookahead != 0;
  ps->local = d->size == 1;
  mt_status st;
  if (ps->local) {
    st = mt__ps_server_new(ps, 0, &ps->server);
  } else {
    mt_dist_work *w = NULL;
    st = new_work(ps, "open", PS_OPEN, &w);
    if (st == MT_OK) st = mt__dist_submit(d, w, NULL);
  }
  if (st != MT_OK) {
    ps->closed = 1;
    mt_ps_free(ps);
    return st;
  }
  d->ps_open++;
  *out = ps;
  return MT_OK;
}

mt_status mt_ps_init(mt_ps *ps, mt_tensor *params, mt_tensor *momentum, int64_t clock, mt_dist_work **work) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":init: the table is NULL");
  if (ps->d->rank == 0) {
    MT_TRY(check_table(ps, "init", "params", params));
    if (momentum) MT_TRY(check_table(ps, "init", "momentum", momentum));
    if (momentum && ps->mom == 0)
      return mt__error(MT_ERR_ARG, NAME ":init: a momentum buffer for a table without momentum");
  }
  if (clock < 0) return mt__error(MT_ERR_ARG, NAME ":init: clock must be >= 0, got %lld", (long long)clock);
  ps->clock = clock;
  ps->generation++;
  mt_dist_work *w = NULL;
  MT_TRY(new_work(ps, "init", MT_PS_INIT, &w));
  if (ps->d->rank == 0) {
    w->a = params;
    w->b = momentum;
  }
  return mt__dist_submit(ps->d, w, work);
}

/* a request about elements [offset, offset + count) of the table, with a as its tensor */
static mt_status range_work(mt_ps *ps, const char *what, int op, mt_tensor *a, int64_t offset, int64_t count,
                            mt_dist_work **out) {
  if (offset < 0 || count < 0 || offset + count > ps->numel)
    return mt__error(MT_ERR_INDEX, NAME ":%s: elements [%lld, %lld) are outside the table of %lld", what,
                     (long long)offset, (long long)(offset + count), (long long)ps->numel);
  MT_TRY(new_work(ps, what, op, out));
  (*out)->a = a;
  (*out)->ps.offset = offset;
  (*out)->ps.count = count;
  return MT_OK;
}

mt_status mt_ps_push(mt_ps *ps, mt_tensor *grad, int64_t offset, mt_dist_work **work) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":push: the table is NULL");
  MT_TRY(check_flat("push", "the gradient", grad));
  mt_dist_work *w = NULL;
  MT_TRY(range_work(ps, "push", MT_PS_PUSH, grad, offset, mt_tensor_numel(grad), &w));
  return mt__dist_submit(ps->d, w, work);
}

mt_status mt_ps_clock(mt_ps *ps, double lr, mt_dist_work **work) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":clock: the table is NULL");
  if (!(lr >= 0) || lr == 1.0 / 0.0)
    return mt__error(MT_ERR_ARG, NAME ":clock: the learning rate must be finite and >= 0, got %g", lr);
  mt_dist_work *w = NULL;
  MT_TRY(new_work(ps, "clock", MT_PS_CLOCK, &w));
  w->ps.lr = lr;
  w->ps.clock = ++ps->clock; /* the new clock */
  return mt__dist_submit(ps->d, w, work);
}

mt_status mt_ps_pull(mt_ps *ps, mt_tensor *params, int64_t offset, int64_t count, int staleness, mt_dist_work **work) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":pull: the table is NULL");
  MT_TRY(check_table(ps, "pull", "params", params));
  mt_dist_work *w = NULL;
  MT_TRY(range_work(ps, "pull", MT_PS_PULL, params, offset, count, &w));
  w->ps.staleness = staleness < 0 ? ps->staleness : staleness;
  return mt__dist_submit(ps->d, w, work);
}

mt_status mt_ps_gather(mt_ps *ps, mt_tensor *params, mt_tensor *momentum, int *started, int64_t *version) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":gather: the table is NULL");
  MT_TRY(check_table(ps, "gather", "params", params));
  if ((momentum != NULL) != (ps->mom != 0))
    return mt__error(
        MT_ERR_ARG, NAME ":gather: %s",
        momentum ? "the table has no momentum buffer to gather" : "the table has momentum: give a tensor for it");
  if (momentum) MT_TRY(check_table(ps, "gather", "momentum", momentum));
  mt_dist_work *w = NULL;
  MT_TRY(new_work(ps, "gather", MT_PS_GATHER, &w));
  w->a = params;
  w->b = momentum;
  w->ps.count = ps->numel;
  mt_dist_work *h = NULL;
  MT_TRY(mt__dist_submit(ps->d, w, &h));
  mt_status st = mt_dist_work_wait(h);
  if (started) *started = h->ps.started;
  if (version) *version = h->ps.version;
  char msg[sizeof h->msg];
  memcpy(msg, h->msg, sizeof msg);
  mt_dist_work_free(h);
  return st == MT_OK ? MT_OK : mt__error(st, "%s", msg);
}

int64_t mt_ps_current_clock(const mt_ps *ps) { return ps ? ps->clock : 0; }

void mt_ps_get_stats(const mt_ps *ps, mt_ps_stats *out) {
  if (!out) return;
  if (!ps) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = ps->stats;
}

void mt_ps_last_versions(const mt_ps *ps, int64_t *out) {
  if (ps && out) memcpy(out, ps->last_version, sizeof *out * (size_t)ps->servers);
}

mt_status mt_ps_close(mt_ps *ps) {
  if (!ps) return mt__error(MT_ERR_ARG, NAME ":close: the table is NULL");
  if (ps->closed) return MT_OK;
  mt_status st = MT_OK;
  if (!ps->local) {
    mt_dist_work *w = NULL;
    MT_TRY(new_work(ps, "close", PS_CLOSE, &w));
    st = mt__dist_submit(ps->d, w, NULL);
  }
  ps->closed = 1;
  ps->d->ps_open--;
  return st;
}

void mt_ps_free(mt_ps *ps) {
  if (!ps) return;
  /* not closed: the program is ending on an error (dist.finalize closes every table). Closing
   * would wait for every peer's STOP; rather stop this rank's server and let the peers hear of
   * this rank's end from the communicator */
  if (!ps->closed) {
    ps->d->ps_open--;
    ps->closed = 1;
#ifdef MT_WITH_MPI
    if (!ps->local) {
      ps->abort = 1; /* the server thread stops at its next look */
      if (ps->thread_started) pthread_detach(ps->thread);
      return; /* it, and requests still queued, may read ps: it stays until the process ends */
    }
#endif
  }
  mt__ps_server_free(ps->server);
  free(ps->last_version);
  free(ps);
}

/* ---- the worker's side, on the communication thread ---- */
static void record_pull(mt_ps *ps, double seconds, double held, int64_t bytes) {
  mt_ps_stats *s = &ps->stats;
  s->pulls++;
  s->held_seconds += held;
  s->pull_seconds += seconds;
  s->bytes_pulled += bytes;
}

/* the servers whose shards meet [offset, offset + count) */
static void servers_of(const mt_ps *ps, int64_t offset, int64_t count, int *first, int *last) {
  *first = 0;
  *last = -1;
  for (int k = 0; k < ps->servers; k++) {
    int64_t lo, n;
    mt__ps_shard(ps, k, &lo, &n);
    if (n == 0 || lo + n <= offset || lo >= offset + count) continue;
    if (*last < *first) *first = k;
    *last = k;
  }
}

static mt_status run_local(mt_ps *ps, mt_dist_work *w) {
  mt_ps_server *s = ps->server;
  mt_ps_msg h = {.clock = w->ps.clock,
                 .offset = w->ps.offset,
                 .count = w->ps.count,
                 .generation = w->ps.generation,
                 .value = w->ps.lr};
  float *params = (float *)mt_tensor_data(s->params);
  switch (w->ps.op) {
    case MT_PS_PUSH:
      ps->stats.pushes++;
      ps->stats.bytes_pushed += 4 * h.count;
      return mt__ps_server_push(s, &h, mt_tensor_data(w->a));
    case MT_PS_CLOCK:
      ps->stats.clocks++;
      MT_TRY(mt__ps_server_clock(s, 0, &h));
      while (mt__ps_server_complete(s)) MT_TRY(mt__ps_server_apply(s));
      return MT_OK;
    case MT_PS_PULL:
    case MT_PS_GATHER: {
      int ready = 0;
      h.need = h.clock - w->ps.staleness;
      MT_TRY(mt__ps_server_ready(s, &h, &ready));
      if (!ready) return mt__error(MT_ERR_INTERNAL, NAME ": a pull one rank cannot answer");
      if (w->ps.op == MT_PS_PULL)
        mt__ps_server_read(s, h.clock, h.offset, h.count, (float *)mt_tensor_data(w->a) + h.offset);
      else memcpy((float *)mt_tensor_data(w->a) + h.offset, params + h.offset, sizeof(float) * (size_t)h.count);
      if (w->b) memcpy(mt_tensor_data(w->b), mt_tensor_data(s->momentum), sizeof(float) * (size_t)s->n);
      w->ps.started = s->momentum_started;
      w->ps.version = s->version;
      ps->last_version[0] = s->version;
      if (w->ps.op == MT_PS_PULL) record_pull(ps, 0, 0, 4 * h.count);
      return MT_OK;
    }
    case MT_PS_INIT:
      h.need = w->b != NULL;
      if (w->a) memcpy(params, mt_tensor_data(w->a), sizeof(float) * (size_t)s->n);
      if (w->b) memcpy(mt_tensor_data(s->momentum), mt_tensor_data(w->b), sizeof(float) * (size_t)s->n);
      return mt__ps_server_init(s, &h);
    default: return MT_OK;
  }
}

#ifdef MT_WITH_MPI
/* requests of up to 3 per server, and for each the rank it talks to (for the wait's messages) */
typedef struct exchange {
  MPI_Request *reqs;
  int *peers;
  mt_ps_msg *out, *in; /* per server: what we send, what we receive */
  int n;
} exchange;

static mt_status exchange_new(const mt_ps *ps, exchange *x) {
  int k = ps->servers;
  x->n = 0;
  x->reqs = malloc(sizeof *x->reqs * (size_t)(4 * k));
  x->peers = malloc(sizeof *x->peers * (size_t)(4 * k));
  x->out = calloc((size_t)k, sizeof *x->out);
  x->in = calloc((size_t)k, sizeof *x->in);
  if (!x->reqs || !x->peers || !x->out || !x->in) return mt__error(MT_ERR_MEMORY, NAME ": out of memory");
  return MT_OK;
}

static void exchange_free(exchange *x) {
  free(x->reqs);
  free(x->peers);
  free(x->out);
  free(x->in);
}

static int add(exchange *x, int rc, int peer) {
  x->peers[x->n++] = peer;
  return rc;
}

#define ISEND(buf, len, type, to, tag, comm) add(&x, MPI_Isend(buf, len, type, to, tag, comm, &x.reqs[x.n]), to)
#define IRECV(buf, len, type, from, tag, comm) add(&x, MPI_Irecv(buf, len, type, from, tag, comm, &x.reqs[x.n]), from)

static mt_status run_mpi(mt_dist *d, mt_ps *ps, mt_dist_work *w) {
  int op = w->ps.op;
  if (op == PS_OPEN) {
    if (MPI_Comm_dup(d->world, &ps->req) != MPI_SUCCESS || MPI_Comm_dup(d->world, &ps->rep) != MPI_SUCCESS)
      return mt__dist_fault(d, NAME ": MPI_Comm_dup failed");
    if (d->rank < ps->servers) {
      MT_TRY(mt__ps_server_new(ps, d->rank, &ps->server));
      MT_TRY(mt__ps_server_start(ps));
    }
    return MT_OK;
  }
  int first = 0, last = ps->servers - 1;
  if (op == MT_PS_PUSH || op == MT_PS_PULL || op == MT_PS_GATHER)
    servers_of(ps, w->ps.offset, w->ps.count, &first, &last);
  if (op == MT_PS_INIT && d->rank != 0) return MT_OK;
  exchange x;
  mt_status st = exchange_new(ps, &x);
  float *a = w->a ? mt_tensor_data(w->a) : NULL, *b = w->b ? mt_tensor_data(w->b) : NULL;
  double start = mt__dist_now();
  int rc = MPI_SUCCESS;
  for (int k = first; st == MT_OK && k <= last; k++) {
    int64_t lo, n;
    mt__ps_shard(ps, k, &lo, &n);
    int64_t from = w->ps.offset > lo ? w->ps.offset : lo;
    int64_t to = w->ps.offset + w->ps.count < lo + n ? w->ps.offset + w->ps.count : lo + n;
    mt_ps_msg *h = &x.out[k];
    *h = (mt_ps_msg){.clock = w->ps.clock, .offset = from, .count = to - from, .generation = w->ps.generation};
    switch (op) {
      case MT_PS_PUSH:
        rc |= ISEND(h, sizeof *h, MPI_BYTE, k, MT_PS_PUSH, ps->req);
        rc |= ISEND(a + (from - w->ps.offset), (int)h->count, MPI_FLOAT, k, MT_PS_DATA, ps->req);
        ps->stats.bytes_pushed += 4 * h->count;
        break;
      case MT_PS_CLOCK:
        h->value = w->ps.lr;
        h->count = 0;
        rc |= ISEND(h, sizeof *h, MPI_BYTE, k, MT_PS_CLOCK, ps->req);
        break;
      case MT_PS_PULL:
      case MT_PS_GATHER:
        h->need = op == MT_PS_PULL ? w->ps.clock - w->ps.staleness : w->ps.clock;
        rc |= IRECV(&x.in[k], sizeof x.in[k], MPI_BYTE, k, MT_PS_REPLY, ps->rep);
        rc |= IRECV(a + from, (int)h->count, MPI_FLOAT, k, MT_PS_DATA, ps->rep);
        if (op == MT_PS_GATHER && b) rc |= IRECV(b + from, (int)h->count, MPI_FLOAT, k, MT_PS_MOMENTUM, ps->rep);
        rc |= ISEND(h, sizeof *h, MPI_BYTE, k, op, ps->req);
        break;
      case MT_PS_INIT:
        h->count = n;
        h->offset = lo;
        h->need = b != NULL;
        rc |= ISEND(h, sizeof *h, MPI_BYTE, k, MT_PS_INIT, ps->req);
        rc |= ISEND(a + lo, (int)n, MPI_FLOAT, k, MT_PS_DATA, ps->req);
        if (b) rc |= ISEND(b + lo, (int)n, MPI_FLOAT, k, MT_PS_MOMENTUM, ps->req);
        break;
      case PS_CLOSE: rc |= ISEND(h, sizeof *h, MPI_BYTE, k, MT_PS_STOP, ps->req); break;
      default: st = mt__error(MT_ERR_INTERNAL, NAME ": unknown request %d", op);
    }
  }
  if (st == MT_OK && rc != MPI_SUCCESS) {
    mt__dist_cancel(x.reqs, x.n);
    st = mt__dist_fault(d, NAME ": MPI refused the %s at clock %lld", op_name(op), (long long)w->ps.clock);
  }
  if (st == MT_OK) st = mt__dist_waitall(d, x.n, x.reqs, x.peers);
  if (st == MT_OK && (op == MT_PS_PULL || op == MT_PS_GATHER)) {
    double held = 0;
    for (int k = first; k <= last; k++) {
      const mt_ps_msg *r = &x.in[k];
      if (r->generation != w->ps.generation || r->clock < x.out[k].need)
        st = mt__error(MT_ERR_INTERNAL,
                       NAME
                       ": server %d answered the %s of clock %lld (needing version %lld) "
                       "at version %lld of generation %lld",
                       k, op_name(op), (long long)w->ps.clock, (long long)x.out[k].need, (long long)r->clock,
                       (long long)r->generation);
      ps->last_version[k] = r->clock;
      if (r->value > held) held = r->value;
      w->ps.started = (int)r->need;
      if (k == first || r->clock < w->ps.version) w->ps.version = r->clock;
    }
    if (op == MT_PS_PULL) record_pull(ps, mt__dist_now() - start, held, 4 * w->ps.count);
  }
  if (st == MT_OK && op == MT_PS_PUSH) ps->stats.pushes++;
  if (st == MT_OK && op == MT_PS_CLOCK) ps->stats.clocks++;
  exchange_free(&x);
  if (st != MT_OK || op != PS_CLOSE) return st;
  /* close: this rank's server ends once every worker has said STOP; then the communicators go */
  if (ps->thread_started) {
    double next = 0;
    while (!ps->thread_done) {
      MT_TRY(mt__dist_poll(d, start, &next));
      struct timespec ts = {0, 200 * 1000};
      nanosleep(&ts, NULL);
    }
    pthread_join(ps->thread, NULL);
    ps->thread_started = 0;
  }
  MPI_Comm_free(&ps->req);
  MPI_Comm_free(&ps->rep);
  return MT_OK;
}
#undef ISEND
#undef IRECV
#endif

mt_status mt__ps_run(mt_dist *d, mt_dist_work *w) {
  mt_ps *ps = w->ps.ps;
  mt__dist_set_current(d, "parameter server %s at clock %lld (servers on ranks 0..%d)", op_name(w->ps.op),
                       (long long)w->ps.clock, ps->servers - 1);
  if (d->broken)
    return mt__error(MT_ERR_DIST, "dist: %s: the communicator is broken: %s", mt__dist_current(d), d->broken_msg);
  if (ps->local) return run_local(ps, w);
#ifdef MT_WITH_MPI
  return run_mpi(d, ps, w);
#else
  return mt__error(MT_ERR_INTERNAL, NAME ": %d ranks without MPI", d->size);
#endif
}
