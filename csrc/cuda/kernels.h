/* kernels.h: the CUDA backend's op implementations (the .cu files under kernels/), one per mt_backend field,
 * each with exactly that field's signature (see csrc/core/backend.h for what they may assume).
 * C linkage so the C op table (csrc/cuda/table.c) can take their addresses. */
#ifndef MT_CUDA_KERNELS_H
#define MT_CUDA_KERNELS_H
#include "../core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pointwise (kernels/pointwise.cu) */
mt_status mt__cuda_fill(mt_tensor *t, double v);
mt_status mt__cuda_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2);
mt_status mt__cuda_binary(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b,
                          double alpha);
mt_status mt__cuda_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                        const mt_tensor *c);
mt_status mt__cuda_masked_fill(mt_tensor *t, const mt_tensor *mask, double v);
mt_status mt__cuda_arange(mt_tensor *t, double start, double step);

/* random (kernels/random.cu) */
mt_status mt__cuda_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi);
mt_status mt__cuda_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std);
mt_status mt__cuda_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p);

/* reductions (kernels/reduce.cu) */
mt_status mt__cuda_reduce(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim,
                          double p, int64_t base);

/* structure and indexing (kernels/index.cu) */
mt_status mt__cuda_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask);
mt_status mt__cuda_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim);
mt_status mt__cuda_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index,
                                int64_t base);
mt_status mt__cuda_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                             int64_t base);
mt_status mt__cuda_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base);
mt_status mt__cuda_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
mt_status mt__cuda_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v,
                           int64_t base);

/* sorting (kernels/sort.cu) */
mt_status mt__cuda_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,
                        int64_t base);
mt_status mt__cuda_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim,
                        int largest, int sorted, int64_t base);

#ifdef __cplusplus
}
#endif
#endif
