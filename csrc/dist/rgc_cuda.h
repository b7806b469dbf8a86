/* rgc_cuda.h: the CUDA bodies of residual gradient compression's device steps
 * (csrc/dist/rgc_cuda.cu), called by topk.c and rgc.c once the arguments are checked and
 * found on a CUDA device. Each runs on the library's stream of that device (mt_cuda_stream)
 * and returns when its results are final for the caller (counts read back where the contract
 * returns one). Built only with the CUDA backend (MT_WITH_CUDA). */
#ifndef MT_DIST_RGC_CUDA_H
#define MT_DIST_RGC_CUDA_H
#include <stdint.h>
#include "../moontorch.h"

/* mt_dist_topk's contract for a contiguous float32 v on a CUDA device; idx/val there too,
 * cap >= what the method may return (checked by the caller). */
mt_status mt__dist_topk_cuda(const mt_tensor *v, double density, int method, double slack, mt_tensor *idx,
                             mt_tensor *val, int64_t *count);
/* mt_dist_rgc_mask's contract, arguments checked */
mt_status mt__dist_rgc_mask_cuda(mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base);
/* mt_dist_rgc_scatter_add's contract, arguments checked except the index range: an index
 * >= numel(dst) is reported as MT_ERR_INDEX (found on the device, then read back) */
mt_status mt__dist_rgc_scatter_add_cuda(mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val, int64_t block,
                                        double scale);
#endif
