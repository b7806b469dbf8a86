/* nn_lppool.c: the CPU loops of LP pooling (csrc/nn/lppool.c checks the arguments): contiguous
 * NCHW planes, one plane per iteration of the parallel loop, written once in generic/nn_lppool.c
 * and compiled per float dtype. The power and the root have fast paths for p = 1 (sum) and p = 2
 * (squares, sqrt); other p go through pow. Sums in the compute type, window by window as the
 * composed Torch7 layers add them. */
#include <math.h>
#include <stdlib.h>
#include "../core/error.h"
#include "../core/dtype.h"
#include "cpu.h"

/* pow and sqrt in the compute type CT (float or double) */
#define LP_POW(CT, v, p) (sizeof(CT) == 4 ? (CT)powf((float)(v), (float)(p)) : (CT)pow((double)(v), (double)(p)))
#define LP_SQRT(CT, v) (sizeof(CT) == 4 ? (CT)sqrtf((float)(v)) : (CT)sqrt((double)(v)))
enum { P1, P2, PG }; /* p = 1, p = 2, any other p */

#define MT_GENERIC_FILE "generic/nn_lppool.c"
#include "generate_float.h"

#define LPF_CASE(E, N, T, CT) \
  case E: lp_forward_##N((const T *)mt__data(xt), (T *)mt__data(yt), g, p, mode); break;
MT_AVX2_CLONES mt_status mt__cpu_lppool2d_forward(mt_tensor *yt, const mt_tensor *xt, const mt_pool_geom *g, double p) {
  int mode = p == 1 ? P1 : p == 2 ? P2 : PG;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(LPF_CASE)
    default: break;
  }
  return MT_OK;
}

/* buf: a plane of the compute type per thread */
#define LPB_CASE(E, N, T, CT)                                                                                         \
  case E:                                                                                                             \
    if ((buf = malloc((size_t)nth * g->H * g->W * sizeof(CT))))                                                       \
      lp_backward_##N((const T *)mt__data(xt), (const T *)mt__data(yt), (const T *)mt__data(dyt), (T *)mt__data(dxt), \
                      buf, g, p, mode);                                                                               \
    break;
MT_AVX2_CLONES mt_status mt__cpu_lppool2d_backward(mt_tensor *dxt, const mt_tensor *dyt, const mt_tensor *xt,
                                                   const mt_tensor *yt, const mt_pool_geom *g, double p) {
  int mode = p == 1 ? P1 : p == 2 ? P2 : PG;
  int nth = omp_get_max_threads();
  void *buf = NULL;
  switch (xt->dtype) {
    MT_FLOAT_DTYPE_LIST(LPB_CASE)
    default: return MT_OK;
  }
  if (!buf) return mt__error(MT_ERR_MEMORY, "nn.SpatialLPPooling: out of memory for the backward buffers");
  free(buf);
  return MT_OK;
}
