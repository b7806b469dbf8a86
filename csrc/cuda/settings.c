/* settings.c: the process-wide numerics settings of the CUDA backend: whether float32 GEMMs and
 * convolutions may use TF32 tensor cores, and how cuDNN convolution algorithms are chosen
 * (heuristics or a timed search) under which workspace limit.
 *
 * Why global state: these settings describe how a whole run computes (a recipe's `-precision
 * tf32`, a benchmark's algorithm search), exactly like PyTorch's
 * torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.benchmark. Threading them
 * through every op's arguments would change every signature from the Lua modules down to the
 * backend table for a flag that never differs between two ops of one run. They are read with
 * relaxed atomics on every GEMM/convolution (a load costs nothing next to a launch), and the
 * cuDNN algorithm cache keys every choice by the settings it was made under, so a change takes
 * effect on the next call without flushing anything. */
#include <math.h>
#include <stdatomic.h>
#include "cuda_common.h"
#include "cudnn_common.h"

static atomic_int allow_tf32;                     /* 0: fp32 FMA only (matches the CPU) */
static atomic_int conv_mode;                      /* mt_conv_algo_mode */
static atomic_llong conv_ws_limit = 1024LL << 20; /* bytes */

mt_status mt_cuda_set_allow_tf32(int allow, int *previous) {
  int old = atomic_exchange_explicit(&allow_tf32, allow != 0, memory_order_relaxed);
  if (previous) *previous = old;
  return MT_OK;
}

int mt_cuda_get_allow_tf32(void) { return atomic_load_explicit(&allow_tf32, memory_order_relaxed); }

/* 1 TiB: far beyond any device, and small enough that the byte count fits every size_t */
#define MAX_WORKSPACE_MB (1024.0 * 1024.0)

mt_status mt_cuda_set_conv_algorithm(int mode, double workspace_mb) {
  const char *op = "cuda.convAlgorithm";
  if (mode != MT_CONV_ALGO_HEURISTIC && mode != MT_CONV_ALGO_SEARCH)
    return mt__error(MT_ERR_ARG, "%s: mode %d is neither heuristic (%d) nor search (%d)", op, mode,
                     MT_CONV_ALGO_HEURISTIC, MT_CONV_ALGO_SEARCH);
  if (!(workspace_mb >= 0) || workspace_mb > MAX_WORKSPACE_MB)
    return mt__error(MT_ERR_ARG, "%s: workspace limit %g MiB must be between 0 and %g MiB", op, workspace_mb,
                     MAX_WORKSPACE_MB);
  atomic_store_explicit(&conv_mode, mode, memory_order_relaxed);
  atomic_store_explicit(&conv_ws_limit, (long long)floor(workspace_mb * 1048576.0), memory_order_relaxed);
  return MT_OK;
}

mt_status mt_cuda_get_conv_algorithm(int *mode, double *workspace_mb) {
  if (mode) *mode = atomic_load_explicit(&conv_mode, memory_order_relaxed);
  if (workspace_mb) *workspace_mb = (double)atomic_load_explicit(&conv_ws_limit, memory_order_relaxed) / 1048576.0;
  return MT_OK;
}

/* the backend's own view (cuda_common.h) */
int mt__cuda_tf32(void) { return atomic_load_explicit(&allow_tf32, memory_order_relaxed); }
int mt__cuda_conv_mode(void) { return atomic_load_explicit(&conv_mode, memory_order_relaxed); }
size_t mt__cuda_conv_ws_limit(void) { return (size_t)atomic_load_explicit(&conv_ws_limit, memory_order_relaxed); }
