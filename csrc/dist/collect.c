/* collect.c: the public collectives. Each call checks its tensors here, in the caller, and
 * queues a work item; on the communication thread the item first exchanges a small signature
 * with every rank (so shapes, dtypes or orders that differ are reported with both ranks'
 * values instead of corrupting memory or hanging), then runs on MPI's collective, on one of our
 * algorithms (ring.c, multicolor.c, hierarchical.c) or, for CUDA tensors, in nccl.c. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <limits.h>
#include "ps.h"

static const char *kind_name(int kind) {
  static const char *names[] = {"barrier", "broadcast", "allreduce", "allgather",      "reduceScatter",
                                "tune",    "loadModel", "ps",        "sparseAllreduce"};
  _Static_assert(sizeof names / sizeof names[0] == MT_WORK_SPARSE + 1, "one name per work kind");
  return names[kind];
}

/* ---- checks, in the caller ---- */
static mt_status check_tensor(const char *op, const char *what, const mt_tensor *t) {
  if (!t) return mt__error(MT_ERR_ARG, "dist.%s: %s is NULL", op, what);
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_ARG, "dist.%s: %s must be contiguous", op, what);
  return MT_OK;
}

static mt_status check_op(const char *name, int op) {
  if (!mt_dist_red_name(op))
    return mt__error(MT_ERR_ARG, "dist.%s: unknown reduction op %d (ids 0..%d)", name, op, MT_NUM_RED - 1);
  return MT_OK;
}

mt_status mt__dist_new_work(mt_dist *d, const char *op, int kind, mt_dist_work **out) {
  if (!d) return mt__error(MT_ERR_ARG, "dist.%s: dist.init() was not called", op);
  if (d->finalized) return mt__error(MT_ERR_DIST, "dist.%s: the communicator is finalized", op);
  if (d->broken) return mt__error(MT_ERR_DIST, "dist.%s: the communicator is broken: %s", op, d->broken_msg);
  mt_dist_work *w = calloc(1, sizeof *w);
  if (!w) return mt__error(MT_ERR_MEMORY, "dist.%s: out of memory", op);
  w->kind = kind;
  *out = w;
  return MT_OK;
}

mt_status mt_dist_barrier(mt_dist *d, mt_dist_work **work) {
  mt_dist_work *w = NULL;
  MT_TRY(mt__dist_new_work(d, "barrier", MT_WORK_BARRIER, &w));
  return mt__dist_submit(d, w, work);
}

mt_status mt_dist_broadcast(mt_dist *d, mt_tensor *t, int root, mt_dist_work **work) {
  MT_TRY(check_tensor("broadcast", "tensor", t));
  if (d && (root < 0 || root >= d->size))
    return mt__error(MT_ERR_ARG, "dist.broadcast: root %d is not a rank (0..%d)", root, d->size - 1);
  mt_dist_work *w = NULL;
  MT_TRY(mt__dist_new_work(d, "broadcast", MT_WORK_BCAST, &w));
  w->a = t;
  w->root = root;
  return mt__dist_submit(d, w, work);
}

mt_status mt_dist_allreduce(mt_dist *d, mt_tensor *t, int op, int alg, mt_dist_work **work) {
  MT_TRY(check_tensor("allreduce", "tensor", t));
  MT_TRY(check_op("allreduce", op));
  if (!mt_dist_alg_name(alg)) return mt__error(MT_ERR_ARG, "dist.allreduce: unknown algorithm %d", alg);
  if (mt__dist_alg_transport(alg) == MT_DIST_NCCL && mt_tensor_device(t) < 0)
    return mt__error(MT_ERR_DEVICE, "dist.allreduce: algorithm %s needs a CUDA tensor, got a CPU one",
                     mt_dist_alg_name(alg));
  if (mt__dist_alg_transport(alg) == MT_DIST_NCCL && !(mt_dist_transports() & MT_DIST_NCCL))
    return mt__error(MT_ERR_UNSUPPORTED, "dist.allreduce: algorithm %s: this build has no NCCL", mt_dist_alg_name(alg));
  mt_dist_work *w = NULL;
  MT_TRY(mt__dist_new_work(d, "allreduce", MT_WORK_ALLREDUCE, &w));
  w->a = t;
  w->op = op;
  w->alg = alg;
  return mt__dist_submit(d, w, work);
}

static mt_status check_pair(mt_dist *d, const char *op, mt_tensor *out, mt_tensor *in, int64_t big, int64_t small,
                            const char *bigname) {
  MT_TRY(check_tensor(op, "out", out));
  MT_TRY(check_tensor(op, "input", in));
  if (mt_tensor_dtype(out) != mt_tensor_dtype(in))
    return mt__error(MT_ERR_DTYPE, "dist.%s: out is %s but input is %s", op, mt_dtype_name(mt_tensor_dtype(out)),
                     mt_dtype_name(mt_tensor_dtype(in)));
  if (mt_tensor_device(out) != mt_tensor_device(in))
    return mt__error(MT_ERR_DEVICE, "dist.%s: out is on device %d but input on device %d", op, mt_tensor_device(out),
                     mt_tensor_device(in));
  int size = d ? d->size : 1;
  if (big != small * size)
    return mt__error(MT_ERR_SHAPE, "dist.%s: %s must hold size() * %lld = %lld elements, has %lld", op, bigname,
                     (long long)small, (long long)(small * size), (long long)big);
  return MT_OK;
}

mt_status mt_dist_allgather(mt_dist *d, mt_tensor *out, mt_tensor *in, mt_dist_work **work) {
  MT_TRY(check_pair(d, "allgather", out, in, out ? mt_tensor_numel(out) : 0, in ? mt_tensor_numel(in) : 0, "out"));
  mt_dist_work *w = NULL;
  MT_TRY(mt__dist_new_work(d, "allgather", MT_WORK_ALLGATHER, &w));
  w->a = out;
  w->b = in;
  return mt__dist_submit(d, w, work);
}

mt_status mt_dist_reduce_scatter(mt_dist *d, mt_tensor *out, mt_tensor *in, int op, mt_dist_work **work) {
  MT_TRY(
      check_pair(d, "reduceScatter", out, in, in ? mt_tensor_numel(in) : 0, out ? mt_tensor_numel(out) : 0, "input"));
  MT_TRY(check_op("reduceScatter", op));
  mt_dist_work *w = NULL;
  MT_TRY(mt__dist_new_work(d, "reduceScatter", MT_WORK_REDUCE_SCATTER, &w));
  w->a = out;
  w->b = in;
  w->op = op;
  return mt__dist_submit(d, w, work);
}

/* ---- on the communication thread ---- */
#ifdef MT_WITH_MPI
static void user_reduce(void *in, void *inout, int *len, MPI_Datatype *t, int op) {
  int dt = mt__dist_dtype_of(*t);
  if (dt >= 0) mt__dist_reduce(inout, in, *len, dt, op);
}
static void user_sum(void *in, void *io, int *len, MPI_Datatype *t) { user_reduce(in, io, len, t, MT_RED_SUM); }
static void user_max(void *in, void *io, int *len, MPI_Datatype *t) { user_reduce(in, io, len, t, MT_RED_MAX); }
static void user_min(void *in, void *io, int *len, MPI_Datatype *t) { user_reduce(in, io, len, t, MT_RED_MIN); }

/* MPI's own type and op where it has them (so the `mpi` algorithm is MPI_Allreduce as users
 * know it); half, bfloat16 and bool go through our reduction as a user-defined op. */
static void mpi_type_op(int dtype, int op, MPI_Datatype *t, MPI_Op *o) {
  static MPI_Op user[3]; /* created once, on the communication thread, freed by MPI_Finalize */
  static int made;
  int r = op == MT_RED_MAX ? 2 : op == MT_RED_MIN ? 1 : 0; /* sum, min, max */
  MPI_Datatype native = MPI_DATATYPE_NULL;
  switch (dtype) {
    case MT_F32: native = MPI_FLOAT; break;
    case MT_F64: native = MPI_DOUBLE; break;
    case MT_I32: native = MPI_INT32_T; break;
    case MT_I64: native = MPI_INT64_T; break;
    case MT_U8: native = MPI_UINT8_T; break;
    case MT_I8: native = MPI_INT8_T; break;
    case MT_I16: native = MPI_INT16_T; break;
    default: break;
  }
  if (native != MPI_DATATYPE_NULL) {
    *t = native;
    *o = r == 0 ? MPI_SUM : r == 1 ? MPI_MIN : MPI_MAX;
    return;
  }
  if (!made) {
    made = 1;
    MPI_Op_create(user_sum, 1, &user[0]);
    MPI_Op_create(user_min, 1, &user[1]);
    MPI_Op_create(user_max, 1, &user[2]);
  }
  *t = mt__dist_bytes_type(dtype);
  *o = user[r];
}

mt_status mt__dist_wait1(mt_dist *d, MPI_Request *r, int rc) {
  if (rc != MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, s, &n);
    return mt__dist_fault(d, "dist: %s: MPI refused it: %.*s", mt__dist_current(d), n, s);
  }
  return mt__dist_waitall(d, 1, r, NULL);
}

mt_status mt__dist_exec(mt_dist *d, int kind, void *a, const void *b, int64_t n, int dtype, int op, int alg, int root) {
  if (n > INT_MAX)
    return mt__error(MT_ERR_UNSUPPORTED, "dist.%s: %lld elements is more than one MPI call carries (%d)",
                     kind_name(kind), (long long)n, INT_MAX);
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Datatype bt = mt__dist_bytes_type(dtype);
  MPI_Datatype t;
  MPI_Op o;
  int red = op == MT_RED_AVG ? MT_RED_SUM : op;
  switch (kind) {
    case MT_WORK_BARRIER: return mt__dist_wait1(d, &r, MPI_Ibarrier(d->world, &r));
    case MT_WORK_BCAST: return mt__dist_wait1(d, &r, MPI_Ibcast(a, (int)n, bt, root, d->world, &r));
    case MT_WORK_ALLGATHER: return mt__dist_wait1(d, &r, MPI_Iallgather(b, (int)n, bt, a, (int)n, bt, d->world, &r));
    case MT_WORK_REDUCE_SCATTER:
      mpi_type_op(dtype, red, &t, &o);
      MT_TRY(mt__dist_wait1(d, &r, MPI_Ireduce_scatter_block(b, a, (int)n, t, o, d->world, &r)));
      break;
    case MT_WORK_ALLREDUCE:
      switch (alg) {
        case MT_ALG_MPI: /* MPI_Allreduce itself: MPI_Iallreduce is up to 2x slower in Open MPI */
          mpi_type_op(dtype, red, &t, &o);
          MT_TRY(mt__dist_blocking_allreduce(d, a, (int)n, t, o));
          break;
        case MT_ALG_RING: MT_TRY(mt__allreduce_ring(d, d->world, a, n, dtype, red)); break;
        case MT_ALG_MULTICOLOR: MT_TRY(mt__allreduce_multicolor(d, d->world, a, n, dtype, red)); break;
        case MT_ALG_HIERARCHICAL: MT_TRY(mt__allreduce_hierarchical(d, a, n, dtype, red)); break;
        default: return mt__error(MT_ERR_ARG, "dist.allreduce: algorithm %s needs CUDA tensors", mt_dist_alg_name(alg));
      }
      break;
    default: return mt__error(MT_ERR_INTERNAL, "dist: unknown work kind %d", kind);
  }
  if (op == MT_RED_AVG && dtype != MT_BOOL) mt__dist_scale_avg(a, n, dtype, d->size); /* bool: avg is or */
  return MT_OK;
}

/* Exchange (kind, dtype, count, op, algorithm, root, seq) with every rank; on any difference
 * every rank fails with the same message naming the first rank that differs from rank 0. */
enum { SIG_N = 7 };
static void sig_text(const int64_t *s, char *buf, size_t len) {
  const char *dt = (s[1] >= 0 && s[1] < MT_NUM_DTYPES) ? mt_dtype_name((int)s[1]) : "?";
  const char *op = mt_dist_red_name((int)s[3]);
  const char *alg = s[0] == MT_WORK_SPARSE ? mt_dist_sparse_alg_name((int)s[4]) : mt_dist_alg_name((int)s[4]);
  snprintf(buf, len, "%s #%lld of %s[%lld]%s%s%s%s root %lld",
           (s[0] >= 0 && s[0] <= MT_WORK_SPARSE) ? kind_name((int)s[0]) : "?", (long long)s[6], dt, (long long)s[2],
           op ? " op " : "", op ? op : "", alg ? " algorithm " : "", alg ? alg : "", (long long)s[5]);
}

static mt_status check_signature(mt_dist *d, const int64_t *mine) {
  int64_t *all = mt__dist_scratch(d, sizeof(int64_t) * SIG_N * (size_t)d->size);
  if (!all) return mt__error(MT_ERR_MEMORY, "dist: out of memory");
  MPI_Request r = MPI_REQUEST_NULL;
  MT_TRY(mt__dist_wait1(d, &r, MPI_Iallgather(mine, SIG_N, MPI_INT64_T, all, SIG_N, MPI_INT64_T, d->world, &r)));
  for (int q = 1; q < d->size; q++) {
    if (memcmp(all, all + SIG_N * q, sizeof(int64_t) * SIG_N) == 0) continue;
    char a[256], b[256];
    sig_text(all, a, sizeof a);
    sig_text(all + SIG_N * q, b, sizeof b);
    return mt__error(MT_ERR_DIST, "dist: ranks disagree at the same collective: rank 0 called %s, rank %d called %s", a,
                     q, b);
  }
  return MT_OK;
}
#endif

/* the algorithm an allreduce of this many bytes runs on this device */
static int resolve(mt_dist *d, int alg, int device, int64_t bytes) {
  if (alg != MT_ALG_AUTO) return alg;
  if (device >= 0 && (mt_dist_transports() & MT_DIST_NCCL)) return MT_ALG_NCCL;
  return mt_dist_auto_choice(d, bytes);
}

static mt_status run(mt_dist *d, mt_dist_work *w) {
  if (w->kind == MT_WORK_TUNE || w->kind == MT_WORK_LOAD_MODEL) return mt__dist_run_model(d, w);
  if (w->kind == MT_WORK_PS) return mt__ps_run(d, w);
  mt_tensor *t = w->a;
  int64_t n = t ? (w->kind == MT_WORK_ALLGATHER ? mt_tensor_numel(w->b) : mt_tensor_numel(t)) : 0;
  int dtype = t ? mt_tensor_dtype(t) : MT_F32, device = t ? mt_tensor_device(t) : -1;
  int64_t bytes = n * (int64_t)mt_dtype_size(dtype);
  if (w->kind == MT_WORK_ALLREDUCE) w->alg = resolve(d, w->alg, device, bytes);
  if (w->kind == MT_WORK_ALLREDUCE)
    mt__dist_set_current(d, "allreduce #%lld (%s, %s[%lld], %s)", (long long)w->seq, mt_dist_alg_name(w->alg),
                         mt_dtype_name(dtype), (long long)n, mt_dist_red_name(w->op));
  else
    mt__dist_set_current(d, "%s #%lld (%s[%lld])", kind_name(w->kind), (long long)w->seq, mt_dtype_name(dtype),
                         (long long)n);
  if (d->broken)
    return mt__error(MT_ERR_DIST, "dist: %s: the communicator is broken: %s", mt__dist_current(d), d->broken_msg);
  if (w->kind == MT_WORK_SPARSE && d->size == 1) return mt__dist_run_sparse(d, w);
  if (d->size == 1) /* one rank: the result is the input (avg of one); out-of-place kinds copy it */
    return w->b ? mt_copy(w->a, w->b) : MT_OK;
#ifdef MT_WITH_MPI
  if (d->check) {
    int64_t sig[SIG_N] = {w->kind, dtype, n, w->op, w->alg, w->root, w->seq};
    if (w->kind == MT_WORK_BARRIER) sig[1] = sig[2] = 0;
    MT_TRY(check_signature(d, sig));
  }
  if (w->kind == MT_WORK_SPARSE) return mt__dist_run_sparse(d, w);
  if (device >= 0) return mt__dist_run_cuda(d, w);
  void *b = w->b ? mt_tensor_data(w->b) : NULL;
  return mt__dist_exec(d, w->kind, t ? mt_tensor_data(t) : NULL, b, n, dtype, w->op, w->alg, w->root);
#else
  return mt__error(MT_ERR_INTERNAL, "dist: %d ranks without MPI", d->size);
#endif
}

mt_status mt__dist_execute(mt_dist *d, mt_dist_work *w) { return run(d, w); }

void mt__dist_run(mt_dist *d, mt_dist_work *w) {
  w->st = run(d, w);
  if (w->st != MT_OK) snprintf(w->msg, sizeof w->msg, "%s", mt_last_error());
}
