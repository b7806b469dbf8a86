/* gemm_par.c: f32/f64 GEMM split over OpenMP threads, each calling a single-threaded BLAS.
 *
 * Why not let OpenBLAS thread its own calls: Debian's OpenBLAS runs a pthread pool of its own,
 * and libgomp's workers keep spinning on their cores for a while after every parallel region
 * (and OpenBLAS's after every call). With both pools busy on few cores, a 512^3 sgemm right
 * after an elementwise op ran at half speed or worse, and the op after it slowed down likewise.
 * With one pool (OpenMP) for everything, the spinning threads are the ones that get the work.
 * The split is written once, in generic/gemm_par.c, for both precisions. */
#include <pthread.h>
#include <cblas.h>
#include "cpu.h"
#include "generate.h"

/* below this many multiply-adds per thread, waking another thread costs more than it saves */
#define GEMM_GRAIN (64.0 * 64.0 * 64.0)

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single(void) { openblas_set_num_threads(1); }

void mt__blas_init(void) { pthread_once(&blas_once, blas_single); }

int mt__gemm_threads(int64_t m, int64_t n, int64_t k) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
  double per = (double)m * (double)n * (double)k / GEMM_GRAIN;
  int nth = omp_get_max_threads();
  if (per < nth) nth = per < 1 ? 1 : (int)per;
  return nth;
#else
  (void)m, (void)n, (void)k;
  return 1;
#endif
}

/* Split m x n into tm x tn blocks (tm * tn <= nth) of about equal size with the smallest
 * perimeter: each thread packs its rows of A and columns of B, so squarer blocks copy less. */
static void grid(int64_t m, int64_t n, int nth, int *tm, int *tn) {
  double best = -1;
  *tm = 1, *tn = 1;
  for (int a = 1; a <= nth; a++) {
    if (nth % a) continue;
    int b = nth / a;
    if (a > (m + 7) / 8 || b > (n + 15) / 16) continue; /* no block thinner than a micro-kernel */
    double cost = (double)m / a + (double)n / b;
    if (best < 0 || cost < best) best = cost, *tm = a, *tn = b;
  }
}

/* [lo, hi) of part i of len split in parts, boundaries rounded to multiples of align (the BLAS
 * micro-kernel's width), so no thread gets a ragged edge it could have avoided */
static void part(int64_t len, int parts, int i, int64_t align, int64_t *lo, int64_t *hi) {
  int64_t units = (len + align - 1) / align;
  int64_t a = units * i / parts, b = units * (i + 1) / parts;
  *lo = a * align < len ? a * align : len;
  *hi = b * align < len ? b * align : len;
}

/* scalar_t's cblas_?NAME in generic/gemm_par.c */
#define CBLAS(name, ...) _Generic((scalar_t)0, float : cblas_s##name, double : cblas_d##name)(__VA_ARGS__)

/* the split once per precision, gemm_blocks_f32 and gemm_blocks_f64 */
#define MT_GENERIC_FILE "generic/gemm_par.c"
#include "generate_blas.h"

void mt__sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc, int nth) {
  gemm_blocks_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nth);
}

void mt__dgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
               const double *b, int64_t ldb, double beta, double *c, int64_t ldc, int nth) {
  gemm_blocks_f64(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nth);
}
