/* threads.c: the intra-op thread count. OpenMP is the only thread pool: BLAS runs
 * single-threaded and csrc/cpu/gemm_par.c splits the larger products over OpenMP threads
 * (two pools spinning on the same cores slowed each other down). */
#include "../moontorch.h"
#ifdef _OPENMP
#include <omp.h>
#endif

void mt_set_num_threads(int n) {
  if (n < 1) n = 1;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

int mt_get_num_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
