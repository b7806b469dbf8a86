/* backend.h: the op table each backend (CPU, CUDA) fills in.
 *
 * The public entry points (csrc/core/ops_*.c) validate arguments, broadcast, resize outputs
 * and then call exactly one backend function. A backend may therefore assume:
 *  - every tensor lives on its device (copy is the exception: one side may be the host),
 *  - dtypes are the ones the entry point documents (e.g. binary: out/a/b same dtype except
 *    comparisons, whose out is MT_U8),
 *  - elementwise operands already have out's shape (inputs may have 0 strides from expand),
 *  - out may alias an input exactly, but never partially.
 * Backends never allocate outputs for the caller except where noted (masked_select).
 */
#ifndef MT_CORE_BACKEND_H
#define MT_CORE_BACKEND_H
#include "tensor.h"

typedef struct mt_backend {
  const char *name;
  /* storage memory */
  mt_status (*alloc)(int device, size_t nbytes, int pinned, void **ptr);
  void (*free)(int device, void *ptr, size_t nbytes, int pinned);
  mt_status (*memory_stats)(int device, mt_memory_stats *out);
  mt_status (*memory_reset_peak)(int device);

  /* pointwise */
  mt_status (*fill)(mt_tensor *t, double v);
  mt_status (*copy)(mt_tensor *dst, const mt_tensor *src); /* same shape; dtypes may differ */
  mt_status (*unary)(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2);
  mt_status (*binary)(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha);
  /* out = a + value * b * c (div = 0) or a + value * b / c (div = 1) */
  mt_status (*addc)(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                    const mt_tensor *c);
  mt_status (*masked_fill)(mt_tensor *t, const mt_tensor *mask, double v); /* mask expanded to t */
  /* resizes out (1-d) itself: the count is data dependent */
  mt_status (*masked_select)(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask);
  mt_status (*arange)(mt_tensor *t, double start, double step);             /* t contiguous */

  /* random: t contiguous; g->offset advanced by the caller */
  mt_status (*random_uniform)(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi);
  mt_status (*random_normal)(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std);
  mt_status (*random_bernoulli)(mt_tensor *t, uint64_t seed, uint64_t offset, double p);

  /* reductions over one dim (dim >= 0, out already sized with keepdim = 1 layout) or all
   * (dim < 0, out 0-d); indices (i64, same shape as out) may be NULL */
  mt_status (*reduce)(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim,
                      double p, int64_t base);

  /* out[i] = beta*out[i] + alpha*a[i]@b[i] for i < batch (3-d tensors, batch dim 0; 2-d
   * callers pass views with a leading 1). out already holds c (copied by the entry point). */
  mt_status (*gemm)(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b);
  /* out = beta*out + alpha*m@v */
  mt_status (*gemv)(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v);
  mt_status (*dot)(const mt_tensor *a, const mt_tensor *b, double *out);

  mt_status (*cat)(mt_tensor *out, mt_tensor *const *inputs, int n, int dim);
  mt_status (*index_select)(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
  mt_status (*index_add)(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                         int64_t base);
  mt_status (*index_fill)(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base);
  mt_status (*gather)(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
  /* src NULL: scatter the scalar v */
  mt_status (*scatter)(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v,
                       int64_t base);
  mt_status (*sort)(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,
                    int64_t base);
  mt_status (*topk)(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim,
                    int largest, int sorted, int64_t base);
} mt_backend;

/* The backend serving a device, or NULL with an error set (e.g. CUDA not compiled in). */
const mt_backend *mt__backend_for(int device, const char *op);
/* Each backend provides its table; mt__cuda_backend is NULL in a CPU-only build. */
extern const mt_backend mt__cpu_backend;
const mt_backend *mt__cuda_backend_get(void);

/* Index-validity errors found inside a backend carry this message shape:
 *   "gather: index 7 out of range for dimension 2 of size 5" (reported 'base'-based). */
#endif
