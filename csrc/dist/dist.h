/* dist.h: what the distributed layer's files share (private; Lua sees moontorch.h only).
 *
 * dist.h       this: the communicator's state and the helpers the files share
 * transport.c  which transports the build has (MPI, NCCL) and their versions
 * comm.c       init/finalize, topology (node communicators, pids), the fault channel, the names
 *              and facts of MT_DIST_ALGS and MT_DIST_REDS
 * wait.c       every wait: progress, deadline, peer faults, diagnosis of dead/stopped ranks
 * queue.h      the work item (collect.c fills it, queue.c runs it)
 * queue.c      the communication thread and the work handles
 * collect.c    the public collectives: checks, signature exchange, dispatch
 * reduce.c     dst = dst op src over every dtype (f16/bf16 in float), multi-threaded
 * ring.c, multicolor.c, hierarchical.c: our allreduce algorithms over MPI point-to-point
 * nccl.c       CUDA tensors (NCCL, or host staging without it)
 * model.c      the cost table behind `auto`
 * ps.h, ps.c, ps_server.c  the stale-synchronous parameter server (a server thread beside the
 *              worker on ranks 0..servers-1; requests run on the communication thread)
 * sparse.c     the sparse allreduce (index, value pairs): allgather or hierarchical
 * topk.c, rgc.c  residual gradient compression's steps (selection; mask and scatter-add): the
 *              checking entry points; the bodies are backend slots (csrc/cpu/dist_*.c,
 *              kernels/dist_*.cu)
 */
#ifndef MT_DIST_DIST_H
#define MT_DIST_DIST_H
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>
#include "../core/error.h"
#ifdef MT_WITH_MPI
#include <mpi.h>
#endif

#define MT_DIST_MODEL_SIZES 12 /* 4 KB * 4^i */
#define MT_TAG_FAULT 7001      /* the fault channel's messages (comm.c sends, wait.c receives) */

struct mt_dist_work;

struct mt_dist {
  int rank, size, local_rank, local_size, node, nodes;
  int launched, finalized, check;
  double timeout;
  int64_t seq; /* collectives issued, the same on every rank that agrees */
  /* set once a fault, timeout or disagreement has been seen: later calls fail with it */
  volatile int broken;
  char broken_msg[1024];
  int *pids;      /* pid of every rank */
  int *same_host; /* 1 where that rank shares this host (so its pid can be inspected) */
  char (*hosts)[64];
  pthread_cond_t done_cv; /* signalled when a work item completes */
  /* the communication thread and its FIFO of work */
  pthread_t thread;
  int thread_started, stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct mt_dist_work *head, *tail;
  /* a blocking MPI call (MPI_Allreduce: Open MPI's nonblocking one is up to 2x slower) cannot
   * be polled; the watchdog thread checks faults and the deadline meanwhile and, on a fault,
   * completes the running work with the error and abandons the thread inside MPI */
  pthread_t watchdog;
  int watchdog_started;
  struct mt_dist_work *running, *abandoned;
  int blocking; /* the communication thread is inside a blocking MPI call */
  double blocking_since;
  /* the auto table: seconds per algorithm at 4 KB * 4^i, negative where not measured */
  int model_rows;
  double model[MT_NUM_ALG][MT_DIST_MODEL_SIZES];
  int colors;          /* multicolor: number of trees (0: min(size, 4)) */
  int64_t chunk_bytes; /* pipelining unit of ring/multicolor/hierarchical */
  void *scratch;       /* grow-only scratch owned by the communication thread */
  size_t scratch_bytes;
#ifdef MT_WITH_MPI
  MPI_Comm world;       /* data traffic (a dup of MPI_COMM_WORLD) */
  MPI_Comm ctrl;        /* the fault channel */
  MPI_Comm local;       /* ranks of this node */
  MPI_Comm leaders;     /* local rank 0 of every node (MPI_COMM_NULL elsewhere) */
  MPI_Request ctrl_req; /* the fault channel's receive (tag MT_TAG_FAULT), posted again after a 'L' */
  char ctrl_buf[1024];  /* 'F' (failed) or 'L' (left) and the message */
  int left_rank;        /* a peer that left without finalize (-1: none), and when we heard */
  double left_at;
  char left_msg[1024]; /* its message: ctrl_buf listens again for the other peers */
#endif
  void *nccl;  /* nccl.c's state, created on the first CUDA collective */
  int ps_open; /* parameter server tables not yet closed (ps.c): finalize waits for none */
};

/* What the algorithms see of a wait. peers[i] is the rank request i talks to (-1: unknown),
 * used to name who we waited for when the deadline passes. what: "allreduce #12 (ring)". */
#ifdef MT_WITH_MPI
/* Waits until every request is complete. On failure the requests are cancelled and freed. */
mt_status mt__dist_waitall(mt_dist *d, int n, MPI_Request *reqs, const int *peers);
/* Waits until at least one request completes; *index is its position (MPI_Waitany style).
 * On failure every request is cancelled and freed, as with waitall. */
mt_status mt__dist_waitany(mt_dist *d, int n, MPI_Request *reqs, const int *peers, int *index);
/* One check of a wait that is not on MPI requests (NCCL): faults, dead peers, the deadline
 * counted from `start` (mt__dist_now). MT_OK to keep waiting. */
double mt__dist_now(void);
mt_status mt__dist_poll(mt_dist *d, double start, double *next_look);
/* Cancel and free every open request: after a failure nothing may still write into buffers. */
void mt__dist_cancel(MPI_Request *reqs, int n);
/* rank r of comm as a rank of d->world, so that a timeout names the rank users know (-1: none) */
int mt__dist_world_rank(mt_dist *d, MPI_Comm comm, int r);
/* MPI_Allreduce (blocking, in place), watched by the watchdog thread */
mt_status mt__dist_blocking_allreduce(mt_dist *d, void *buf, int n, MPI_Datatype t, MPI_Op op);
/* the MPI datatype moving `dtype` as bytes, and its element size */
MPI_Datatype mt__dist_bytes_type(int dtype);
#endif
/* a fault: marks the communicator broken with this message (the first one wins) and returns
 * MT_ERR_DIST with it */
mt_status mt__dist_fault(mt_dist *d, const char *fmt, ...) MT_PRINTF(2, 3);
/* " rank 2 (pid 81, host a) has died;" ... for every inspectable peer that is dead or stopped;
 * empty when none. Async-signal-safe (the SIGTERM handler uses it). */
void mt__dist_diagnose(const mt_dist *d, char *buf, size_t len);
/* what an algorithm of MT_DIST_ALGS runs on: MT_DIST_MPI (host buffers), MT_DIST_NCCL (CUDA
 * tensors only) or 0 (auto, chosen per message; also for ids outside the list) */
int mt__dist_alg_transport(int alg);
/* the description of the current collective, for messages (set by collect.c) */
const char *mt__dist_current(const mt_dist *d);
void mt__dist_set_current(mt_dist *d, const char *fmt, ...) MT_PRINTF(2, 3);
/* scratch of at least `bytes`, owned by the communication thread (grows, never shrinks) */
void *mt__dist_scratch(mt_dist *d, size_t bytes);

/* dst[i] = dst[i] op src[i] for n elements of dtype; op is MT_RED_SUM/MAX/MIN (AVG sums).
 * Threads over large n. Half and bfloat16 are reduced in float and rounded once. */
void mt__dist_reduce(void *dst, const void *src, int64_t n, int dtype, int op);
/* t[i] /= count, for AVG (integers: truncating division) */
void mt__dist_scale_avg(void *buf, int64_t n, int dtype, int count);

#ifdef MT_WITH_MPI
/* Our allreduce algorithms, in place on n elements of buf over comm; op is SUM/MAX/MIN.
 * Each is correct for any comm size (1 included) and any n (0 included). */
mt_status mt__allreduce_ring(mt_dist *d, MPI_Comm comm, void *buf, int64_t n, int dtype, int op);
mt_status mt__allreduce_multicolor(mt_dist *d, MPI_Comm comm, void *buf, int64_t n, int dtype, int op);
mt_status mt__allreduce_hierarchical(mt_dist *d, void *buf, int64_t n, int dtype, int op);
/* building blocks hierarchical.c and others share: binomial-tree reduce to / bcast from root */
mt_status mt__tree_reduce(mt_dist *d, MPI_Comm comm, int root, void *buf, int64_t n, int dtype, int op);
mt_status mt__tree_bcast(mt_dist *d, MPI_Comm comm, int root, void *buf, int64_t n, int dtype);
#endif

#endif
