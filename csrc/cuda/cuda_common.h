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


/* ---- shared by the backend's own files (device.c, alloc.c, host_alloc.c, copy.c, blas.c) ---- */

#define MT_CUDA_MAX_DEVICES 64

/* mt__cuda_stream with a status: an error (naming op) when the device is missing or the stream
 * cannot be created. Also makes `device` current for the calling thread. */
mt_status mt__cuda_get_stream(int device, cudaStream_t *out, const char *op);
/* Make `device` current for the calling thread. */
mt_status mt__cuda_set_device(int device, const char *op);

/* A pool of timing-free events per device (creating events is not free; the allocators use
 * many short-lived ones). get makes `device` current. */
mt_status mt__cuda_event_get(int device, cudaEvent_t *ev);
void mt__cuda_event_put(int device, cudaEvent_t ev);

/* device caching allocator (alloc.c); pinned = 1 routes to the pinned host allocator */
mt_status mt__cuda_alloc(int device, size_t nbytes, int pinned, void **ptr);
void mt__cuda_free(int device, void *ptr, size_t nbytes, int pinned);
mt_status mt__cuda_memory_stats(int device, mt_memory_stats *out);
mt_status mt__cuda_memory_reset_peak(int device);
/* The block starting at ptr (a storage's data on `device`) is used by work queued on `stream`
 * (of device `stream_device`), which is not the stream it was allocated on: when it is freed, it
 * is reused only after that work is done. */
void mt__cuda_record_stream(int device, void *ptr, int stream_device, cudaStream_t stream);
/* Return cached, unused device segments to the driver (device < 0: every device). */
mt_status mt__cuda_release_cached(int device);

/* pinned host allocator (host_alloc.c) */
mt_status mt__cuda_host_alloc(size_t nbytes, void **ptr);
void mt__cuda_host_free(void *ptr);
/* The pinned block starting at ptr is read or written by work queued on `stream` of `device`:
 * a freed block is reused only once that work has completed. No-op for other pointers. */
void mt__cuda_host_record(void *ptr, int device, cudaStream_t stream);
void mt__cuda_host_release_cached(void);

/* copies (copy.c) and the strided dtype-converting copy kernel (copy_kernels.cu): dst and src on
 * the same device, same sizes, any dtypes and strides; queued on the device's stream. */
mt_status mt__cuda_copy(mt_tensor *dst, const mt_tensor *src);
mt_status mt__cuda_convert(mt_tensor *dst, const mt_tensor *src);

/* cuBLAS products (blas.c) */
mt_status mt__cuda_gemm(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b);
mt_status mt__cuda_gemv(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v);
mt_status mt__cuda_dot(const mt_tensor *a, const mt_tensor *b, double *out);

#ifdef __cplusplus
}
#endif
#endif
