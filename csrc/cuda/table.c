/* table.c: the CUDA backend's op table: every slot of core/backend.h's list, filled with the
 * mt__cuda_ function of the same name (infrastructure from this directory: memory, copy,
 * cuBLAS, cuDNN; kernels from kernels/, all declared in kernels/kernels.h). */
#include "cuda_common.h"

static const mt_backend cuda_backend = {.name = "cuda", MT_BACKEND_OPS(MT_BACKEND_ENTRY, mt__cuda_)};

/* Always the table in a CUDA build; whether a device exists is checked per request
 * (mt__backend_for), so a CUDA build still runs on machines without a GPU. */
const mt_backend *mt__cuda_backend_get(void) { return &cuda_backend; }
