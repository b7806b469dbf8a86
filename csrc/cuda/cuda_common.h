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

/* The table's functions implemented here (declared in kernels.h from core/backend.h's list):
 * mt__cuda_alloc/free/memory_stats/memory_reset_peak (alloc.c: the device caching allocator;
 * pinned = 1 routes to the pinned host allocator), mt__cuda_copy (copy.c: between devices and
 * the host; same-device copies go to mt__cuda_convert), mt__cuda_gemm/gemv/dot (blas.c:
 * cuBLAS) and mt__cuda_conv2d_* (cudnn_conv.c: cuDNN). */

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

/* the settings of settings.c (mt_cuda_set_allow_tf32, mt_cuda_set_conv_algorithm), read on
 * every GEMM and convolution */
int mt__cuda_tf32(void);
int mt__cuda_conv_mode(void);        /* mt_conv_algo_mode */
size_t mt__cuda_conv_ws_limit(void); /* bytes */

#ifdef __cplusplus
}
#endif
#endif
