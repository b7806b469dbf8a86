/* queue.h: a unit of work for the communication thread (queue.c runs it, collect.c fills it). */
#ifndef MT_DIST_QUEUE_H
#define MT_DIST_QUEUE_H
#include "dist.h"

enum {
  MT_WORK_BARRIER,
  MT_WORK_BCAST,
  MT_WORK_ALLREDUCE,
  MT_WORK_ALLGATHER,
  MT_WORK_REDUCE_SCATTER,
  MT_WORK_TUNE,
  MT_WORK_LOAD_MODEL,
  MT_WORK_PS,    /* a parameter server request (ps.c): not collective, no signature */
  MT_WORK_SPARSE /* mt_dist_sparse_allreduce (sparse.c) */
};

struct mt_dist_work {
  mt_dist *d;
  int kind, op, alg, root;
  mt_tensor *a, *b, *c; /* retained until done: a is in/out (allreduce, bcast) or out, b (and c) in */
  int64_t counters[2];  /* sparse: bytes received, pairs (mt_dist_work_counters) */
  int64_t seq, arg;     /* arg: tune's max bytes and reps, load's path (see model.c) */
  char path[512];
  /* MT_WORK_PS: which request (MT_PS_PUSH ... of ps.h) and its numbers, fixed at issue */
  struct {
    struct mt_ps *ps;
    int op, staleness;
    int64_t offset, count, clock, generation;
    double lr;
    int started;     /* gather: out, momentum started */
    int64_t version; /* gather: out, the clocks applied */
  } ps;
  volatile int done;
  mt_status st;
  char msg[1024];
  /* Given up on by the watchdog while its blocking MPI call goes on (wait.c): the owner has its
   * error, but the item and its tensors stay alive until the call returns, since MPI still
   * writes into them. Whichever of the owner's free and the call's return comes last frees it
   * (under d->mu). */
  int abandoned, returned, owner_gone;
  struct mt_dist_work *next;
};

/* a zeroed work item of `kind`, or the error of a communicator that cannot take one */
mt_status mt__dist_new_work(mt_dist *d, const char *op, int kind, mt_dist_work **out);
mt_status mt__dist_submit(mt_dist *d, mt_dist_work *w, mt_dist_work **out);
void mt__dist_run(mt_dist *d, mt_dist_work *w);             /* collect.c */
mt_status mt__dist_execute(mt_dist *d, mt_dist_work *w);    /* collect.c: run it, w->st untouched */
mt_status mt__dist_run_model(mt_dist *d, mt_dist_work *w);  /* model.c */
mt_status mt__dist_run_sparse(mt_dist *d, mt_dist_work *w); /* sparse.c */
#ifdef MT_WITH_MPI
int mt__dist_dtype_of(MPI_Datatype t); /* wait.c */
/* CUDA tensors (nccl.c): run w on the device, or stage through the host */
mt_status mt__dist_run_cuda(mt_dist *d, mt_dist_work *w);
/* the CPU path on explicit buffers, shared by collect.c and the host staging in nccl.c */
/* waits for the one request an MPI_I* call (which returned rc) started */
mt_status mt__dist_wait1(mt_dist *d, MPI_Request *r, int rc);
mt_status mt__dist_exec(mt_dist *d, int kind, void *a, const void *b, int64_t n, int dtype, int op, int alg, int root);
#endif
#endif
