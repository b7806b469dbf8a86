/* ps.h: the stale-synchronous parameter server (private to csrc/dist/; Lua sees moontorch.h).
 *
 * ps.c         the public entry points (checks, work items) and the worker's side of each
 *              request, run on the communication thread: push, clock, pull, init, gather, close
 * ps_server.c  one server: its shard, the clocks it has heard, the clock updates it applies and
 *              the requests it holds back; in-process calls with one rank, else its own thread
 *              serving MPI messages
 *
 * Consistency (Ho et al. 2013, Bösen): a clock is one iteration of one worker. A server keeps,
 * for each of its s+1 open clocks, the sum of the gradients the workers pushed for it; when
 * every worker has ended clock k (its clock message says k+1), the server applies clock k's
 * mean gradient in one fused pass of optim.sgd's step (momentum, dampening, Nesterov, weight
 * decay) and its version becomes k+1. A pull by a worker at clock c is answered once the
 * version is >= c - s, with the shard as it is then: every update of clocks <= c - s - 1 of
 * every worker, and whatever arrived after. With s = 0 that is exactly the previous clock's
 * state: synchronous SGD. With s > 0 a push also shows in the shard at once (Bösen's eager
 * propagation), scaled by the last clock's rate and the step's gradient coefficient; the
 * clock's own step later adds the momentum part and takes the eager part back out, so each
 * clock's total is optim.sgd's update exactly.
 *
 * Wire: two communicators duplicated from the world, `req` (worker -> server) and `rep`
 * (server -> worker). Every message is an mt_ps_msg; bulk data follow as a second message from
 * the same sender with tag DATA (and MOMENTUM), which MPI's non-overtaking order pairs with
 * the header. */
#ifndef MT_DIST_PS_H
#define MT_DIST_PS_H
#include "queue.h"

enum {
  MT_PS_PUSH = 1, /* gradient of `clock` for [offset, offset+count): DATA follows */
  MT_PS_CLOCK,    /* the sender ended a clock: `clock` is its new one, value the rate of the old */
  MT_PS_PULL,     /* parameters [offset, offset+count) once version >= need */
  MT_PS_INIT,     /* the shard's state at version `clock`: DATA (and MOMENTUM when need) follow */
  MT_PS_GATHER,   /* parameters and momentum of [offset, offset+count) once version >= need */
  MT_PS_STOP,     /* the sender will send nothing more */
  MT_PS_REPLY,    /* server -> worker: header of an answer to PULL or GATHER */
  MT_PS_DATA,
  MT_PS_MOMENTUM
};

typedef struct mt_ps_msg {
  int64_t clock;      /* push: the gradient's clock; clock: the sender's new clock; pull, gather:
                         the sender's clock; reply: the server's version; init: the version */
  int64_t offset;     /* first element, as an index into the whole flat parameter vector */
  int64_t count;      /* elements that follow in DATA (0: none) */
  int64_t generation; /* which mt_ps_init the sender has seen (a server holds back pulls of a
                         later one until that init arrives) */
  int64_t need;       /* pull, gather: the version to wait for; init, reply: momentum started */
  double value;       /* clock: the learning rate of the clock it ends; reply: seconds held */
} mt_ps_msg;

/* one server's state: shard [lo, lo + n) of the flat float32 vector */
typedef struct mt_ps_server {
  int index, workers, staleness;
  int64_t lo, n;
  /* (n), (n) or NULL, float64 (staleness + 1, n). The sums are float64 so that they do not
   * depend on the order the pushes arrive in: a run repeats bit for bit, and resumes so. */
  mt_tensor *params, *momentum, *accum;
  double *lr;     /* per accumulation slot: worker 0's rate for that clock */
  double *alpha;  /* per slot, s > 0: the factor its pushes were applied with at once (-1: none yet) */
  double lr_last; /* the rate of the last clock stepped (the eager pushes' estimate) */
  int64_t *clock; /* per worker: the clock it has reached */
  int64_t version, generation;
  int momentum_started; /* 0: the next step starts the buffer with the gradient (Torch7) */
  double mom, dampening, weight_decay;
  int nesterov, lookahead;
  char error[512]; /* set once a request broke the protocol: the server stops */
} mt_ps_server;

struct mt_ps {
  mt_dist *d;
  int servers, workers, staleness, local; /* local: one rank, the server is called in-process */
  int64_t numel;
  double mom, dampening, weight_decay;
  int nesterov, lookahead;
  int64_t clock, generation; /* this worker's, as the caller has issued them */
  mt_ps_server *server;      /* the shard this rank serves (ranks 0 .. servers-1), else NULL */
  int closed;
  /* the last completed pull: each server's version and how long it held the request */
  int64_t *last_version;
  mt_ps_stats stats;
#ifdef MT_WITH_MPI
  MPI_Comm req, rep;
  pthread_t thread;
  int thread_started;
  volatile int thread_done, abort;
#endif
};

/* the shard of server k: [lo, lo + n) */
void mt__ps_shard(const mt_ps *ps, int k, int64_t *lo, int64_t *n);

/* ---- a server's state machine (ps_server.c), the same in-process and over MPI ---- */
mt_status mt__ps_server_new(mt_ps *ps, int index, mt_ps_server **out);
void mt__ps_server_free(mt_ps_server *s);
/* the gradient of h->clock for [h->offset, +h->count) */
mt_status mt__ps_server_push(mt_ps_server *s, const mt_ps_msg *h, const float *data);
/* worker w's clock message */
mt_status mt__ps_server_clock(mt_ps_server *s, int worker, const mt_ps_msg *h);
/* 1 when every worker has ended the clock the version names: mt__ps_server_apply may step */
int mt__ps_server_complete(const mt_ps_server *s);
/* applies that clock's mean gradient; the version grows by one */
mt_status mt__ps_server_apply(mt_ps_server *s);
/* a new state at version h->clock (params, and momentum when h->need); every worker's clock
 * becomes that version and the open clocks are dropped */
mt_status mt__ps_server_init(mt_ps_server *s, const mt_ps_msg *h);
/* what a pull from a worker at `clock` reads of [offset, offset + count): the shard, moved on by
 * the momentum part of the clock - version steps not yet taken when lookahead is on */
void mt__ps_server_read(const mt_ps_server *s, int64_t clock, int64_t offset, int64_t count, float *out);
/* 1 when a pull or gather may be answered now, 0 to hold it; an error for a bad range */
mt_status mt__ps_server_ready(mt_ps_server *s, const mt_ps_msg *h, int *ready);

#ifdef MT_WITH_MPI
/* the thread serving s over ps->req/rep until every worker sent STOP (or abort) */
mt_status mt__ps_server_start(mt_ps *ps);
#endif

/* the worker's side of a work item (ps.c), on the communication thread */
mt_status mt__ps_run(mt_dist *d, mt_dist_work *w);

#endif
