/* cpu.h: the CPU backend's functions. Every slot of the op table (core/backend.h says what each
 * may assume) is declared from the one list as mt__cpu_<slot>; table.c fills the table from the
 * same list. */
#ifndef MT_CPU_H
#define MT_CPU_H
#include "../core/backend.h"

/* Parallelise a loop over [0, n) with OpenMP when the work is large enough to pay for it. */
#define MT_PARALLEL_GRAIN 32768
/* the thread count loops size their work by, and a thread's slot in per-thread scratch; 1 and 0
 * in a build without OpenMP */
#ifdef _OPENMP
#include <omp.h>
#else
#define omp_get_max_threads() 1
#define omp_get_thread_num() 0
#endif

MT_BACKEND_OPS(MT_BACKEND_DECLARE, mt__cpu_)

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
/* the output sizes (T, H, W) of a 3-d convolution with input sizes in[3] and kernel sizes k[3];
 * geo = {stride[3], padding[3], dilation[3]}, each in T, H, W order. 0 when a stride or dilation
 * is below 1, a padding negative, or the dilated kernel larger than the padded input. */
static inline int mt__conv3d_out(const int64_t *in, const int64_t *k, const int *geo, int64_t *out) {
  for (int i = 0; i < 3; i++) {
    int64_t e = (int64_t)geo[6 + i] * (k[i] - 1) + 1, n = in[i] + 2 * (int64_t)geo[3 + i];
    if (geo[i] < 1 || geo[6 + i] < 1 || geo[3 + i] < 0 || n < e) return 0;
    out[i] = (n - e) / geo[i] + 1;
  }
  return 1;
}
/* nn_vol.c: the 3-d convolution columns of output rows [q0, q1) only (a row: the oW positions of
 * one (ot, oy)), (C kT kH kW) x ((q1 - q0) oW), for elements of esize bytes (2, 4 or 8); par:
 * split the rows of the columns over the threads */
void mt__vol2col_rows(size_t esize, const void *x, void *col, const mt_vol_geom *g, int64_t q0, int64_t q1, int par);
/* for hot entry points whose loops the compiler vectorizes: an AVX2 clone (with its OpenMP
 * bodies), chosen at load time, runs them eight floats or four doubles to a vector. Without FMA
 * there are no contracted multiply-adds, so both clones give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MT_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MT_AVX2_CLONES
#endif
/* a helper whose constant arguments must fold into its caller's loop (a compiled loop per
 * variant, as the macros that it replaces gave) */
#define MT_ALWAYS_INLINE static inline __attribute__((always_inline))

#endif
