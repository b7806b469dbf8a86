/* nccl.c: collectives on CUDA tensors. With NCCL (the `nccl` algorithm, and what `auto` picks
 * for CUDA tensors) they run on a stream of their own after the library's compute stream, and
 * the communication thread polls that stream, NCCL's asynchronous error and the fault channel,
 * so a dead peer or the timeout aborts the NCCL communicator instead of hanging. Without NCCL,
 * or with one of our algorithms, the tensors are staged through host memory and reduced there. */
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include "queue.h"
#ifdef MT_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

#ifdef MT_WITH_MPI
/* host copies of a (and b), the CPU path, and the result copied back */
static mt_status staged(mt_dist *d, mt_dist_work *w) {
  mt_tensor *ha = NULL, *hb = NULL;
  int dtype = mt_tensor_dtype(w->a);
  int64_t na = mt_tensor_numel(w->a);
  mt_status st = mt_tensor_new(&ha, dtype, -1, 1, &na);
  if (st == MT_OK && w->kind != MT_WORK_ALLGATHER) st = mt_copy(ha, w->a);
  if (st == MT_OK && w->b) {
    int64_t nb = mt_tensor_numel(w->b);
    st = mt_tensor_new(&hb, dtype, -1, 1, &nb);
    if (st == MT_OK) st = mt_copy(hb, w->b);
  }
  if (st == MT_OK) {
    /* an algorithm that runs on host buffers as asked, the others (nccl, auto) as auto picks */
    int alg = mt__dist_alg_transport(w->alg) == MT_DIST_MPI
                  ? w->alg
                  : mt_dist_auto_choice(d, na * (int64_t)mt_dtype_size(dtype));
    int64_t n = w->kind == MT_WORK_ALLGATHER ? mt_tensor_numel(w->b) : na;
    st = mt__dist_exec(d, w->kind, mt_tensor_data(ha), hb ? mt_tensor_data(hb) : NULL, n, dtype, w->op, alg, w->root);
  }
  if (st == MT_OK) st = mt_copy(w->a, ha);
  if (ha) mt_tensor_release(ha);
  if (hb) mt_tensor_release(hb);
  return st;
}
#endif

#ifdef MT_WITH_NCCL
typedef struct {
  ncclComm_t comm;
  cudaStream_t stream;
  cudaEvent_t ready;
  int device;
} nccl_state;

static mt_status nccl_fail(mt_dist *d, const char *what, ncclResult_t r) {
  return mt__dist_fault(d, "dist: %s: %s failed: %s", mt__dist_current(d), what, ncclGetErrorString(r));
}

/* wait for NCCL work (or the communicator's creation) without ever blocking in NCCL: first
 * until the communicator reports the call issued (ncclCommGetAsyncError no longer
 * ncclInProgress, as NCCL's non-blocking mode requires), then for the stream */
static mt_status nccl_wait(mt_dist *d, nccl_state *s, int on_stream) {
  double start = mt__dist_now(), next_look = start + 0.1;
  for (int spin = 0;; spin++) {
    ncclResult_t ar = ncclSuccess;
    ncclCommGetAsyncError(s->comm, &ar);
    if (ar != ncclSuccess && ar != ncclInProgress) {
      ncclCommAbort(s->comm);
      s->comm = NULL;
      return nccl_fail(d, "NCCL", ar);
    }
    /* a non-blocking communicator's call may still be enqueueing (ncclInProgress): until it
     * says ncclSuccess the stream can look idle with nothing on it yet */
    if (ar == ncclSuccess && !on_stream) return MT_OK;
    if (ar == ncclSuccess) {
      cudaError_t q = cudaStreamQuery(s->stream);
      if (q == cudaSuccess) return MT_OK;
      if (q != cudaErrorNotReady)
        return mt__dist_fault(d, "dist: %s: CUDA: %s", mt__dist_current(d), cudaGetErrorString(q));
    }
    mt_status st = mt__dist_poll(d, start, &next_look);
    if (st != MT_OK) {
      ncclCommAbort(s->comm); /* the only way out of a collective whose peer is gone */
      s->comm = NULL;
      return st;
    }
    if (spin > 200) sched_yield();
  }
}

static mt_status nccl_get(mt_dist *d, int device, nccl_state **out) {
  nccl_state *s = d->nccl;
  if (s && s->device != device)
    return mt__error(MT_ERR_DEVICE,
                     "dist: the NCCL communicator of this rank is on device %d, the tensor on device %d "
                     "(one device per rank)",
                     s->device, device);
  if (s && !s->comm) return mt__error(MT_ERR_DIST, "dist: the NCCL communicator was aborted after a failure");
  if (s) {
    *out = s;
    return MT_OK;
  }
  if (cudaSetDevice(device) != cudaSuccess) return mt__error(MT_ERR_CUDA, "dist: cannot use CUDA device %d", device);
  s = calloc(1, sizeof *s);
  if (!s) return mt__error(MT_ERR_MEMORY, "dist: out of memory");
  s->device = device;
  ncclUniqueId id;
  if (d->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) {
    free(s);
    return mt__error(MT_ERR_DIST, "dist: ncclGetUniqueId failed");
  }
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Ibcast(&id, (int)sizeof id, MPI_BYTE, 0, d->world, &r);
  mt_status st = mt__dist_waitall(d, 1, &r, NULL);
  if (st != MT_OK) {
    free(s);
    return st;
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0; /* so a missing peer is a timeout, not a hang */
  ncclResult_t nr = ncclCommInitRankConfig(&s->comm, d->size, id, d->rank, &cfg);
  if (nr != ncclSuccess && nr != ncclInProgress) {
    free(s);
    return nccl_fail(d, "ncclCommInitRankConfig", nr);
  }
  if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming) != cudaSuccess) {
    free(s);
    return mt__error(MT_ERR_CUDA, "dist: cannot create the NCCL stream on device %d", device);
  }
  d->nccl = s;
  MT_TRY(nccl_wait(d, s, 0));
  *out = s;
  return MT_OK;
}

static int nccl_type(int dtype, ncclDataType_t *t) {
  switch (dtype) {
    case MT_F32: *t = ncclFloat32; return 1;
    case MT_F64: *t = ncclFloat64; return 1;
    case MT_F16: *t = ncclFloat16; return 1;
    case MT_BF16: *t = ncclBfloat16; return 1;
    case MT_I32: *t = ncclInt32; return 1;
    case MT_I64: *t = ncclInt64; return 1;
    case MT_U8: *t = ncclUint8; return 1;
    case MT_I8: *t = ncclInt8; return 1;
    default: return 0;
  }
}

static mt_status on_device(mt_dist *d, mt_dist_work *w) {
  int device = mt_tensor_device(w->a), dtype = mt_tensor_dtype(w->a);
  ncclDataType_t t;
  if (!nccl_type(dtype, &t)) return staged(d, w); /* bool */
  nccl_state *s = NULL;
  MT_TRY(nccl_get(d, device, &s));
  void *core = NULL;
  MT_TRY(mt_cuda_stream(device, &core));
  /* after what the library has queued on its stream (the producer of these tensors) */
  if (cudaEventRecord(s->ready, (cudaStream_t)core) != cudaSuccess ||
      cudaStreamWaitEvent(s->stream, s->ready, 0) != cudaSuccess)
    return mt__error(MT_ERR_CUDA, "dist: cannot order the NCCL stream after the compute stream");
  ncclRedOp_t op = w->op == MT_RED_AVG   ? ncclAvg
                   : w->op == MT_RED_MAX ? ncclMax
                   : w->op == MT_RED_MIN ? ncclMin
                                         : ncclSum;
  void *a = mt_tensor_data(w->a), *b = w->b ? mt_tensor_data(w->b) : NULL;
  size_t n = (size_t)mt_tensor_numel(w->a);
  ncclResult_t r;
  switch (w->kind) {
    case MT_WORK_ALLREDUCE: r = ncclAllReduce(a, a, n, t, op, s->comm, s->stream); break;
    case MT_WORK_BCAST: r = ncclBroadcast(a, a, n, t, w->root, s->comm, s->stream); break;
    case MT_WORK_ALLGATHER: r = ncclAllGather(b, a, (size_t)mt_tensor_numel(w->b), t, s->comm, s->stream); break;
    case MT_WORK_REDUCE_SCATTER: r = ncclReduceScatter(b, a, n, t, op, s->comm, s->stream); break;
    default: return staged(d, w);
  }
  if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(d, "NCCL collective", r);
  return nccl_wait(d, s, 1);
}
#endif

#ifdef MT_WITH_MPI
mt_status mt__dist_run_cuda(mt_dist *d, mt_dist_work *w) {
#ifdef MT_WITH_NCCL
  if (w->kind != MT_WORK_ALLREDUCE || mt__dist_alg_transport(w->alg) == MT_DIST_NCCL) return on_device(d, w);
#endif
  return staged(d, w);
}
#endif

void mt__dist_nccl_free(mt_dist *d) {
#ifdef MT_WITH_NCCL
  nccl_state *s = d->nccl;
  if (!s) return;
  if (s->comm) ncclCommDestroy(s->comm);
  cudaStreamDestroy(s->stream);
  cudaEventDestroy(s->ready);
  free(s);
#endif
  d->nccl = NULL;
}
