/* cpu.h: the CPU backend's functions (see core/backend.h for what each may assume). */
#ifndef MT_CPU_H
#define MT_CPU_H
#include "../core/backend.h"

/* Parallelise a loop over [0, n) with OpenMP when the work is large enough to pay for it. */
#define MT_PARALLEL_GRAIN 32768

mt_status mt__cpu_alloc(int device, size_t nbytes, int pinned, void **ptr);
void mt__cpu_free(int device, void *ptr, size_t nbytes, int pinned);
mt_status mt__cpu_memory_stats(int device, mt_memory_stats *out);
mt_status mt__cpu_memory_reset_peak(int device);

/* pointwise.c */
mt_status mt__cpu_fill(mt_tensor *t, double v);
mt_status mt__cpu_copy(mt_tensor *dst, const mt_tensor *src);
mt_status mt__cpu_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2);
mt_status mt__cpu_binary(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha);
mt_status mt__cpu_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b,
                       const mt_tensor *c);
mt_status mt__cpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double v);
mt_status mt__cpu_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask);
mt_status mt__cpu_arange(mt_tensor *t, double start, double step);

/* random.c */
mt_status mt__cpu_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi);
mt_status mt__cpu_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std);
mt_status mt__cpu_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p);

/* reduce.c */
mt_status mt__cpu_reduce(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim, double p,
                         int64_t base);
/* sort.c */
mt_status mt__cpu_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending,
                       int64_t base);
mt_status mt__cpu_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim, int largest,
                       int sorted, int64_t base);

/* blas.c */
mt_status mt__cpu_gemm(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b);
mt_status mt__cpu_gemv(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v);
mt_status mt__cpu_dot(const mt_tensor *a, const mt_tensor *b, double *out);

/* gemm_par.c: row-major C = alpha*op(A)*op(B) + beta*C (ta/tb: A/B stored transposed) on up to
 * nth OpenMP threads, each with a single-threaded BLAS call on a block of C; nth < 1 picks the
 * count from the size (mt__gemm_threads). Serial inside a parallel region. The pointers are
 * assumed valid and the sizes within the BLAS integer range. */
void mt__blas_init(void); /* OpenBLAS single-threaded: OpenMP is the only thread pool */
int mt__gemm_threads(int64_t m, int64_t n, int64_t k);
void mt__sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc, int nth);
void mt__dgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
               const double *b, int64_t ldb, double beta, double *c, int64_t ldc, int nth);

/* index.c */
mt_status mt__cpu_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim);
mt_status mt__cpu_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
mt_status mt__cpu_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha,
                            int64_t base);
mt_status mt__cpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base);
mt_status mt__cpu_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
mt_status mt__cpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v,
                          int64_t base);
#endif
