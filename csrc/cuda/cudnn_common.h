/* cudnn_common.h: one cuDNN handle per device, bound to that device's stream, with a small
 * per-handle hash table of convolution algorithm choices; cuDNN errors as moontorch errors. */
#ifndef MT_CUDNN_COMMON_H
#define MT_CUDNN_COMMON_H
#include <cudnn.h>
#include "cuda_common.h"

/* The handle of `device`, created on first use, with its stream set to mt__cuda_stream(device).
 * Also makes `device` current. The caller holds the handle's lock until mt__cudnn_release:
 * cuDNN handles must not be used by two threads at once. */
mt_status mt__cudnn_acquire(int device, cudnnHandle_t *out, const char *op);
void mt__cudnn_release(int device);

mt_status mt__cudnn_error(cudnnStatus_t st, const char *op, const char *file, int line);
#define MT_CUDNN_TRY(expr, op)                                                                  \
  do {                                                                                          \
    cudnnStatus_t mt__s = (expr);                                                               \
    if (mt__s != CUDNN_STATUS_SUCCESS) return mt__cudnn_error(mt__s, (op), __FILE__, __LINE__); \
  } while (0)

/* cuDNN's data type for a moontorch float dtype (0 on success) */
int mt__cudnn_dtype(int dtype, cudnnDataType_t *out);

/* The algorithm cache, keyed by everything that decides a convolution's algorithm. Looked up
 * and filled under the handle's lock (between acquire and release). */
enum { MT_CUDNN_FWD = 0, MT_CUDNN_BWD_DATA = 1, MT_CUDNN_BWD_FILTER = 2 };
typedef struct mt__cudnn_conv_key {
  int kind, dtype, groups;
  int N, C, H, W, O, kH, kW, sH, sW, pH, pW, dH, dW;
  int layout; /* the memory layout every operand is described in: MT_CUDNN_NCHW or MT_CUDNN_NHWC */
  int tf32;   /* float32 may use TF32 tensor ops (settings.c) */
  int search; /* chosen by a timed search (1) or by the heuristics (0) */
  int ws_kib; /* the workspace limit it was chosen under, in KiB */
} mt__cudnn_conv_key;
enum { MT_CUDNN_NCHW = 0, MT_CUDNN_NHWC = 1 };
typedef struct mt__cudnn_conv_algo {
  int algo; /* the cudnnConvolution*Algo_t value */
  int math; /* the cudnnMathType_t it was chosen with */
  size_t workspace;
} mt__cudnn_conv_algo;
int mt__cudnn_cache_get(int device, const mt__cudnn_conv_key *key, mt__cudnn_conv_algo *out); /* 1: found */
mt_status mt__cudnn_cache_put(int device, const mt__cudnn_conv_key *key, const mt__cudnn_conv_algo *algo);

#endif
