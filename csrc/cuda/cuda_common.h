/* cuda_common.h: what every CUDA backend file shares: the per-device stream all ops run on,
 * and turning CUDA/cuBLAS failures into moontorch errors. */
#ifndef MT_CUDA_COMMON_H
#define MT_CUDA_COMMON_H
#include <cuda_runtime.h>
#include "../core/backend.h"
#include "../core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stream every op on `device` is queued on (created on first use, non-blocking with respect
 * to the legacy default stream). Also makes `device` current for the calling thread. */
cudaStream_t mt__cuda_stream(int device);

/* Convert a CUDA error into an mt_status with a message naming the op. */
mt_status mt__cuda_error(cudaError_t err, const char *op, const char *file, int line);

#define MT_CUDA_TRY(expr, op)                                                  \
  do {                                                                         \
    cudaError_t mt__e = (expr);                                                \
    if (mt__e != cudaSuccess) return mt__cuda_error(mt__e, (op), __FILE__, __LINE__); \
  } while (0)

/* After a kernel launch: report launch failures (bad configuration, no device). */
#define MT_CUDA_LAUNCH_CHECK(op) MT_CUDA_TRY(cudaGetLastError(), (op))

#ifdef __cplusplus
}
#endif
#endif
