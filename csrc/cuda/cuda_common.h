/* cuda_common.h: what the host side of the CUDA backend (csrc/cuda) shares: devices, events,
 * the allocators, copies, cuBLAS and cuDNN entry points. The stream and error services it
 * shares with the device code are declared in kernels/kernels.h. */
#ifndef MT_CUDA_COMMON_H
#define MT_CUDA_COMMON_H
#include <cuda_runtime.h>
#include "../core/backend.h"
#include "../core/error.h"
#include "../../kernels/kernels.h" /* the launchers and the stream/error services they share */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shared by the backend's own files (device.c, alloc.c, host_alloc.c, copy.c, blas.c) ---- */

#define MT_CUDA_MAX_DEVICES 64

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

/* copies between devices and the host (copy.c); same-device copies go to mt__cuda_convert */
mt_status mt__cuda_copy(mt_tensor *dst, const mt_tensor *src);

/* cuBLAS products (blas.c) */
mt_status mt__cuda_gemm(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b);
mt_status mt__cuda_gemv(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v);
mt_status mt__cuda_dot(const mt_tensor *a, const mt_tensor *b, double *out);

/* cuDNN convolution (cudnn_conv.c): the mt_backend fields of the same names */
mt_status mt__cuda_nn_conv2d_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *w, const mt_tensor *b,
                                     const mt_conv_geom *g);
mt_status mt__cuda_nn_conv2d_backward_input(mt_tensor *dx, const mt_tensor *dy, const mt_tensor *w,
                                            const mt_conv_geom *g);
mt_status mt__cuda_nn_conv2d_backward_params(mt_tensor *dw, mt_tensor *db, const mt_tensor *x, const mt_tensor *dy,
                                             double scale, const mt_conv_geom *g);

#ifdef __cplusplus
}
#endif
#endif
