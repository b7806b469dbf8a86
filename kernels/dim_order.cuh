/* dim_order.cuh: the order in which an elementwise kernel visits a shape. Pointwise kernels map
 * a thread's linear index to each operand's offset through the logical (row-major) shape; for a
 * channels-last tensor that puts neighbouring threads C elements apart in memory, so every load
 * and store is a separate transaction (a ResNet-50 residual add took 12x its NCHW time on an
 * H100). Where the result does not depend on the visiting order, the dims are first permuted
 * so that operand 0's strides descend, as if the operands were contiguous in that order: a
 * dense tensor of any dim order then merges to one contiguous run. */
#ifndef MTK_DIM_ORDER_CUH
#define MTK_DIM_ORDER_CUH
#include <stdint.h>

/* true when dim b should be visited outside dim a: the first operand whose strides for the two
 * differ, neither 0 (a broadcast says nothing about order), has the larger stride at b */
static inline bool mtk_dim_outer(int a, int b, int nops, const int64_t *const *strides) {
  for (int k = 0; k < nops; k++) {
    int64_t sa = strides[k][a], sb = strides[k][b];
    if (sa == 0 || sb == 0 || sa == sb) continue;
    return sb > sa;
  }
  return false;
}

/* perm[0..ndim): dims outermost first (a stable insertion sort: ties keep the logical order) */
static inline void mtk_dim_order(int ndim, int nops, const int64_t *const *strides, int *perm) {
  for (int d = 0; d < ndim; d++) perm[d] = d;
  for (int i = 1; i < ndim; i++)
    for (int j = i; j > 0 && mtk_dim_outer(perm[j - 1], perm[j], nops, strides); j--) {
      int t = perm[j - 1];
      perm[j - 1] = perm[j];
      perm[j] = t;
    }
}
#endif
