/* threads.c: the intra-op thread count (OpenMP for our loops, OpenBLAS for BLAS). */
#include "../moontorch.h"
#ifdef _OPENMP
#include <omp.h>
#endif

void openblas_set_num_threads(int n); /* from OpenBLAS; declared here to avoid its cblas.h */

void mt_set_num_threads(int n) {
  if (n < 1) n = 1;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  openblas_set_num_threads(n);
}

int mt_get_num_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
