/* table.c: the CUDA backend's op table: infrastructure from this directory (memory, copy,
 * cuBLAS), kernels from the kernels/ directory (declared in kernels.h). */
#include "cuda_common.h"
#include "kernels.h"

static const mt_backend cuda_backend = {
    .name = "cuda",
    .alloc = mt__cuda_alloc,
    .free = mt__cuda_free,
    .memory_stats = mt__cuda_memory_stats,
    .memory_reset_peak = mt__cuda_memory_reset_peak,
    .fill = mt__cuda_fill,
    .copy = mt__cuda_copy,
    .unary = mt__cuda_unary,
    .binary = mt__cuda_binary,
    .addc = mt__cuda_addc,
    .masked_fill = mt__cuda_masked_fill,
    .masked_select = mt__cuda_masked_select,
    .arange = mt__cuda_arange,
    .random_uniform = mt__cuda_random_uniform,
    .random_normal = mt__cuda_random_normal,
    .random_bernoulli = mt__cuda_random_bernoulli,
    .reduce = mt__cuda_reduce,
    .gemm = mt__cuda_gemm,
    .gemv = mt__cuda_gemv,
    .dot = mt__cuda_dot,
    .cat = mt__cuda_cat,
    .index_select = mt__cuda_index_select,
    .index_add = mt__cuda_index_add,
    .index_fill = mt__cuda_index_fill,
    .gather = mt__cuda_gather,
    .scatter = mt__cuda_scatter,
    .sort = mt__cuda_sort,
    .topk = mt__cuda_topk,
};

/* Always the table in a CUDA build; whether a device exists is checked per request
 * (mt__backend_for), so a CUDA build still runs on machines without a GPU. */
const mt_backend *mt__cuda_backend_get(void) { return &cuda_backend; }
