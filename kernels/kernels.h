/* kernels.h: the one interface between the device code (the .cu files here) and the host side of the
 * CUDA backend (csrc/cuda). Two directions:
 *  - the backend's table functions, declared from csrc/core/backend.h's list (most are launchers
 *    here, the rest host code in csrc/cuda), registered by csrc/cuda/table.c;
 *  - the few host services kernels/ uses (streams, error conversion), implemented in csrc/cuda.
 * Only core headers are included, so kernels/ never reaches into csrc/cuda or csrc/nn.
 * C linkage so the C side can take the launchers' addresses. */
#ifndef MT_KERNELS_H
#define MT_KERNELS_H
#include <cuda_runtime.h>
#include "../csrc/core/backend.h"
#include "../csrc/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host services (csrc/cuda/device.c) ---- */

/* The stream every op on `device` is queued on (created on first use, non-blocking with respect
 * to the legacy default stream). Also makes `device` current for the calling thread. */
cudaStream_t mt__cuda_stream(int device);
/* mt__cuda_stream with a status: an error (naming op) when the device is missing or the stream
 * cannot be created. */
mt_status mt__cuda_get_stream(int device, cudaStream_t *out, const char *op);
/* Convert a CUDA error into an mt_status with a message naming the op. */
mt_status mt__cuda_error(cudaError_t err, const char *op, const char *file, int line);

#define MT_CUDA_TRY(expr, op)                                                         \
  do {                                                                                \
    cudaError_t mt__e = (expr);                                                       \
    if (mt__e != cudaSuccess) return mt__cuda_error(mt__e, (op), __FILE__, __LINE__); \
  } while (0)

/* After a kernel launch: report launch failures (bad configuration, no device). */
#define MT_CUDA_LAUNCH_CHECK(op) MT_CUDA_TRY(cudaGetLastError(), (op))

/* ---- launchers ---- */

/* the strided dtype-converting copy (kernels/copy.cu): dst and src on the same device, same
 * sizes, any dtypes and strides; queued on the device's stream */
mt_status mt__cuda_convert(mt_tensor *dst, const mt_tensor *src);

/* Every slot of the op table, as mt__cuda_<slot> (csrc/core/backend.h's list): most are
 * launchers here (pointwise.cu, random.cu, reduce.cu, index.cu, sort.cu, nn_*.cu, optim.cu,
 * dist_*.cu); memory, copy, cuBLAS and cuDNN convolution are host code in csrc/cuda. */
MT_BACKEND_OPS(MT_BACKEND_DECLARE, mt__cuda_)

/* the bias of a convolution (kernels/nn_conv_bias.cu), used by cuDNN convolution: y (N x O x H
 * x W, NCHW-contiguous or channels-last) += b (O); db (O) += scale * the sum of dy (either
 * layout) over batch and plane */
mt_status mt__cuda_conv_bias_add(mt_tensor *y, const mt_tensor *b);
mt_status mt__cuda_conv_bias_grad(mt_tensor *db, const mt_tensor *dy, double scale);

#ifdef __cplusplus
}
#endif
#endif
