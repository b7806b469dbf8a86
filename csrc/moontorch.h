/* moontorch.h: the one public C API of libmoontorch.
 *
 * Conventions
 *  - Every fallible function returns mt_status; on failure mt_last_error() holds a
 *    message (thread-local) naming the operation and the offending shapes/dtypes.
 *    The library never aborts, exits or prints on a user error.
 *  - Dimensions and indices are 0-based here; the Lua layer converts from Torch7's 1-based
 *    convention. Ops that read or write index tensors take `base` (the Lua side passes 1).
 *  - Devices: -1 is the CPU, 0..n-1 are CUDA devices.
 *  - Outputs are passed in and resized as needed (Torch7's `torch.add(res, a, b)`); an
 *    output may alias an input for elementwise ops.
 *  - Functions returning a new handle (mt_tensor **out) give the caller one reference,
 *    dropped with mt_tensor_release.
 *
 * The block between MT_FFI_BEGIN and MT_FFI_END is fed to LuaJIT's ffi.cdef at build
 * time: cmake/gen_cdefs.cmake runs this header through the C preprocessor with MT_CDEF_GEN
 * defined and keeps the block, so it may expand the lists below but holds declarations
 * only (no includes, no inline code, no #-lines of its own).
 */
#ifndef MOONTORCH_H
#define MOONTORCH_H

#ifndef MT_CDEF_GEN /* LuaJIT knows the standard types; their headers must not reach ffi.cdef */
#include <stddef.h>
#include <stdint.h>
#endif

/* The dtypes: the one list every backend, table and the Lua layer expand. A dtype's id is its
 * position (append new ones at the end). MT_DTYPES(X, ...) calls, per dtype,
 *   X(ENUM, N, T, CT, NAME, TORCH, ST, FL, ...)
 * N: short token for pasting (mt_ld_##N; bool's is b8 because stdbool.h makes `bool` a macro);
 * T: CPU storage type; CT: compute type (f16/bf16 in float, integers in int64_t); NAME:
 * mt_dtype_name; TORCH: Torch7's type name (FloatTensor); ST: the safetensors name; FL: 1 for
 * floating dtypes. Trailing arguments pass through. CUDA maps N to its own storage types. */
#define MT_DTYPES(X, ...)                                                           \
  X(MT_F32, f32, float, float, "float32", "Float", "F32", 1, __VA_ARGS__)           \
  X(MT_F64, f64, double, double, "float64", "Double", "F64", 1, __VA_ARGS__)        \
  X(MT_F16, f16, uint16_t, float, "float16", "Half", "F16", 1, __VA_ARGS__)         \
  X(MT_BF16, bf16, uint16_t, float, "bfloat16", "BFloat16", "BF16", 1, __VA_ARGS__) \
  X(MT_I32, i32, int32_t, int64_t, "int32", "Int", "I32", 0, __VA_ARGS__)           \
  X(MT_I64, i64, int64_t, int64_t, "int64", "Long", "I64", 0, __VA_ARGS__)          \
  X(MT_U8, u8, uint8_t, int64_t, "uint8", "Byte", "U8", 0, __VA_ARGS__)             \
  X(MT_BOOL, b8, uint8_t, int64_t, "bool", "Bool", "BOOL", 0, __VA_ARGS__)          \
  X(MT_I8, i8, int8_t, int64_t, "int8", "Char", "I8", 0, __VA_ARGS__)               \
  X(MT_I16, i16, int16_t, int64_t, "int16", "Short", "I16", 0, __VA_ARGS__)

/* The ops, in id order. X(ENUM, NAME, KIND, ...): NAME is the Torch7 name used in messages;
 * KIND is ANY (every dtype), FLOAT (floating dtypes only), INT (integer dtypes and bool only)
 * or CMP (every dtype, writes uint8).
 * A new op is one line here, its CPU body and its CUDA body: both backends generate their
 * kernels and dispatch from these lists, so a missing body does not compile, and Lua makes a
 * method of every parameterless unary op under its NAME (mt_unary_op_name). */
#define MT_UNARY_OPS(X, ...)                                           \
  X(MT_NEG, "neg", ANY, __VA_ARGS__)                                   \
  X(MT_ABS, "abs", ANY, __VA_ARGS__)                                   \
  X(MT_SIGN, "sign", ANY, __VA_ARGS__)                                 \
  X(MT_EXP, "exp", FLOAT, __VA_ARGS__)                                 \
  X(MT_LOG, "log", FLOAT, __VA_ARGS__)                                 \
  X(MT_SQRT, "sqrt", FLOAT, __VA_ARGS__)                               \
  X(MT_RSQRT, "rsqrt", FLOAT, __VA_ARGS__)                             \
  X(MT_TANH, "tanh", FLOAT, __VA_ARGS__)                               \
  X(MT_SIGMOID, "sigmoid", FLOAT, __VA_ARGS__)                         \
  X(MT_FLOOR, "floor", ANY, __VA_ARGS__)                               \
  X(MT_CEIL, "ceil", ANY, __VA_ARGS__)                                 \
  X(MT_ROUND, "round", ANY, __VA_ARGS__)                               \
  X(MT_LOG1P, "log1p", FLOAT, __VA_ARGS__)                             \
  X(MT_EXPM1, "expm1", FLOAT, __VA_ARGS__)                             \
  X(MT_SQUARE, "square", ANY, __VA_ARGS__)                             \
  X(MT_RECIPROCAL, "cinv", FLOAT, __VA_ARGS__)                         \
  X(MT_SIN, "sin", FLOAT, __VA_ARGS__)                                 \
  X(MT_COS, "cos", FLOAT, __VA_ARGS__)                                 \
  X(MT_RELU, "relu", ANY, __VA_ARGS__)                                 \
  X(MT_POW_SCALAR, "pow", ANY, __VA_ARGS__)  /* a ^ p1 */              \
  X(MT_RPOW_SCALAR, "pow", ANY, __VA_ARGS__) /* p1 ^ a */              \
  X(MT_CLAMP, "clamp", ANY, __VA_ARGS__)     /* min(max(a, p1), p2) */ \
  X(MT_ADD_SCALAR, "add", ANY, __VA_ARGS__)  /* a + p1 */              \
  X(MT_MUL_SCALAR, "mul", ANY, __VA_ARGS__)  /* a * p1 */              \
  X(MT_DIV_SCALAR, "div", ANY, __VA_ARGS__)  /* a / p1 */              \
  X(MT_EQ_SCALAR, "eq", CMP, __VA_ARGS__)                              \
  X(MT_NE_SCALAR, "ne", CMP, __VA_ARGS__)                              \
  X(MT_LT_SCALAR, "lt", CMP, __VA_ARGS__)                              \
  X(MT_LE_SCALAR, "le", CMP, __VA_ARGS__)                              \
  X(MT_GT_SCALAR, "gt", CMP, __VA_ARGS__)                              \
  X(MT_GE_SCALAR, "ge", CMP, __VA_ARGS__)                              \
  X(MT_ACOS, "acos", FLOAT, __VA_ARGS__)                               \
  X(MT_ASIN, "asin", FLOAT, __VA_ARGS__)                               \
  X(MT_ATAN, "atan", FLOAT, __VA_ARGS__)                               \
  X(MT_TAN, "tan", FLOAT, __VA_ARGS__)                                 \
  X(MT_SINH, "sinh", FLOAT, __VA_ARGS__)                               \
  X(MT_COSH, "cosh", FLOAT, __VA_ARGS__)                               \
  X(MT_TRUNC, "trunc", FLOAT, __VA_ARGS__)                             \
  X(MT_FRAC, "frac", FLOAT, __VA_ARGS__) /* x - trunc(x) */

#define MT_BINARY_OPS(X, ...)                                                \
  X(MT_ADD, "add", ANY, __VA_ARGS__) /* a + alpha*b */                       \
  X(MT_SUB, "sub", ANY, __VA_ARGS__) /* a - alpha*b */                       \
  X(MT_MUL, "cmul", ANY, __VA_ARGS__)                                        \
  X(MT_DIV, "cdiv", ANY, __VA_ARGS__)                                        \
  X(MT_POW, "cpow", ANY, __VA_ARGS__)                                        \
  X(MT_MAXIMUM, "cmax", ANY, __VA_ARGS__)                                    \
  X(MT_MINIMUM, "cmin", ANY, __VA_ARGS__)                                    \
  X(MT_FMOD, "fmod", ANY, __VA_ARGS__) /* sign of a, as C fmod */            \
  X(MT_ATAN2, "atan2", FLOAT, __VA_ARGS__)                                   \
  X(MT_EQ, "eq", CMP, __VA_ARGS__)                                           \
  X(MT_NE, "ne", CMP, __VA_ARGS__)                                           \
  X(MT_LT, "lt", CMP, __VA_ARGS__)                                           \
  X(MT_LE, "le", CMP, __VA_ARGS__)                                           \
  X(MT_GT, "gt", CMP, __VA_ARGS__)                                           \
  X(MT_GE, "ge", CMP, __VA_ARGS__)                                           \
  X(MT_REMAINDER, "cremainder", ANY, __VA_ARGS__) /* sign of b */            \
  X(MT_BITAND, "cbitand", INT, __VA_ARGS__)                                  \
  X(MT_BITOR, "cbitor", INT, __VA_ARGS__)                                    \
  X(MT_BITXOR, "cbitxor", INT, __VA_ARGS__)                                  \
  X(MT_LSHIFT, "clshift", INT, __VA_ARGS__) /* count outside 0..bits-1: 0 */ \
  X(MT_RSHIFT, "crshift", INT, __VA_ARGS__) /* logical, as Torch7 */

/* reductions: KIND FLOAT refuses integer inputs; p is described per op */
#define MT_REDUCE_OPS(X, ...)                                                            \
  X(MT_SUM, "sum", ANY, __VA_ARGS__)                                                     \
  X(MT_PROD, "prod", ANY, __VA_ARGS__)                                                   \
  X(MT_MEAN, "mean", FLOAT, __VA_ARGS__)                                                 \
  X(MT_MAX, "max", ANY, __VA_ARGS__)                                                     \
  X(MT_MIN, "min", ANY, __VA_ARGS__)                                                     \
  X(MT_ARGMAX, "argmax", ANY, __VA_ARGS__)                                               \
  X(MT_ARGMIN, "argmin", ANY, __VA_ARGS__)                                               \
  X(MT_VAR, "var", FLOAT, __VA_ARGS__)   /* p = correction (1: unbiased, 0: biased) */   \
  X(MT_STD, "std", FLOAT, __VA_ARGS__)   /* p = correction */                            \
  X(MT_NORM, "norm", FLOAT, __VA_ARGS__) /* p = order (0: count nonzero, inf allowed) */ \
  X(MT_ANY, "any", ANY, __VA_ARGS__)                                                     \
  X(MT_ALL, "all", ANY, __VA_ARGS__)

/* The distributed layer's allreduce algorithms, in id order: X(ENUM, NAME, TUNED, ON, ...).
 * NAME is the name Lua and messages use (mt_dist_alg_name); TUNED is 1 for the algorithms
 * mt_dist_tune times and `auto` may pick (csrc/dist/model.c); ON is what it runs on: MPI (host
 * buffers; CUDA tensors are staged through host memory; a build without MPI has one rank and
 * nothing to exchange), NCCL (CUDA tensors only, in a build with NCCL) or ANY (auto: chosen per
 * message). The enum, the names, the cost table's rows, the checks of collect.c and Lua's
 * dist.algorithms() (and so the recipes' -allreduce choices) come from this list. */
#define MT_DIST_ALGS(X, ...)                                                                     \
  X(MT_ALG_AUTO, "auto", 0, ANY, __VA_ARGS__) /* nccl for CUDA tensors, else the cost table's */ \
  X(MT_ALG_MPI, "mpi", 1, MPI, __VA_ARGS__)   /* MPI_Allreduce itself */                         \
  X(MT_ALG_RING, "ring", 1, MPI, __VA_ARGS__)                                                    \
  X(MT_ALG_MULTICOLOR, "multicolor", 1, MPI, __VA_ARGS__)                                        \
  X(MT_ALG_HIERARCHICAL, "hierarchical", 1, MPI, __VA_ARGS__)                                    \
  X(MT_ALG_NCCL, "nccl", 0, NCCL, __VA_ARGS__)

/* The reduction ops of the collectives, in id order: X(ENUM, NAME, ...) (mt_dist_red_name).
 * AVG is SUM divided by the number of ranks after the exchange. */
#define MT_DIST_REDS(X, ...)        \
  X(MT_RED_SUM, "sum", __VA_ARGS__) \
  X(MT_RED_AVG, "avg", __VA_ARGS__) \
  X(MT_RED_MAX, "max", __VA_ARGS__) \
  X(MT_RED_MIN, "min", __VA_ARGS__)

/* The exchanges of a sparse allreduce (mt_dist_sparse_allreduce), in id order: X(ENUM, NAME, ...).
 * allgather: every rank receives every rank's pairs (bytes per rank grow with the rank count);
 * hierarchical: pairs gathered and merged at each node's leader, merged sets (or a dense ring,
 * where cheaper) among the leaders, the sum back into the node sparse or dense. */
#define MT_DIST_SPARSE_ALGS(X, ...)                \
  X(MT_SPARSE_ALLGATHER, "allgather", __VA_ARGS__) \
  X(MT_SPARSE_HIERARCHICAL, "hierarchical", __VA_ARGS__)

#define MT__ENUM_ROW(E, ...) E,

#ifdef __cplusplus
extern "C" {
#endif

/* MT_FFI_BEGIN */
typedef enum mt_status {
  MT_OK = 0,
  MT_ERR_ARG = 1,    /* bad argument (NULL, bad enum, bad scalar) */
  MT_ERR_SHAPE = 2,  /* sizes do not match or cannot broadcast */
  MT_ERR_DTYPE = 3,  /* dtype not supported or mismatched */
  MT_ERR_DEVICE = 4, /* tensors on different devices, or device missing */
  MT_ERR_INDEX = 5,  /* index or dimension out of range */
  MT_ERR_MEMORY = 6, /* out of memory (host or device) */
  MT_ERR_CUDA = 7,   /* CUDA runtime/library failure, or no CUDA in this build */
  MT_ERR_UNSUPPORTED = 8,
  MT_ERR_IO = 9,
  MT_ERR_INTERNAL = 10,
  MT_ERR_FORMAT = 11, /* corrupt or unsupported file content (image, shard, IDX, CIFAR) */
  MT_ERR_DIST = 12    /* a peer failed, left or disagreed, or a collective timed out */
} mt_status;

typedef enum mt_dtype { MT_DTYPES(MT__ENUM_ROW, ~) MT_NUM_DTYPES } mt_dtype;

typedef struct mt_tensor mt_tensor;

/* Counter-based RNG state (Philox 4x32-10): element i of a draw uses counter offset+i,
 * so CPU and CUDA produce the same numbers for the same seed. Owned by the caller. */
typedef struct mt_generator {
  uint64_t seed;
  uint64_t offset;
} mt_generator;

typedef struct mt_memory_stats {
  int64_t allocated; /* bytes in live tensors' storages */
  int64_t reserved;  /* bytes held from the system (>= allocated with caching) */
  int64_t peak_allocated;
  int64_t peak_reserved;
  int64_t num_allocs;        /* storage allocations served */
  int64_t num_system_allocs; /* calls to malloc / cudaMalloc (a warm cache stops these) */
} mt_memory_stats;

typedef enum mt_unary_op { MT_UNARY_OPS(MT__ENUM_ROW, ~) MT_NUM_UNARY_OPS } mt_unary_op;

typedef enum mt_binary_op { MT_BINARY_OPS(MT__ENUM_ROW, ~) MT_NUM_BINARY_OPS } mt_binary_op;

typedef enum mt_reduce_op { MT_REDUCE_OPS(MT__ENUM_ROW, ~) MT_NUM_REDUCE_OPS } mt_reduce_op;

/* library */
const char *mt_version(void);
const char *mt_last_error(void);
mt_status mt_last_status(void);
void mt_clear_error(void);
const char *mt_dtype_name(int dtype);
size_t mt_dtype_size(int dtype);
int mt_dtype_is_floating(int dtype);
const char *mt_dtype_torch_name(int dtype); /* "Float", "Double", ...; NULL if invalid */
const char *mt_dtype_ctype(int dtype);      /* storage C type: "float", "uint16_t", ...; NULL if invalid */
const char *mt_unary_op_name(int op);       /* Torch7's name of a unary op: "exp", "cinv"; NULL if invalid */
void mt_set_num_threads(int n);
int mt_get_num_threads(void);
/* SIGINT and SIGTERM recorded instead of ending the process (csrc/core/signals.c), for a
 * training loop that stops at its next step's end: catch(1) installs the handlers, catch(0)
 * puts the previous ones back; caught() is the signal number recorded (0: none); a second
 * signal before clear() ends the process as the signal would. */
mt_status mt_signals_catch(int on);
int mt_signals_caught(void);
void mt_signals_clear(void);
/* CPU float32 convolutions (csrc/cpu/conv_backend.c): MT_CONV_BACKEND_NATIVE (default) runs
 * im2col + GEMM or Winograd; MT_CONV_BACKEND_ONEDNN runs oneDNN in its own (blocked) layouts, reordering to and
 * from NCHW, and MT_CONV_BACKEND_ONEDNN_NCHW on the NCHW tensors as they are (both
 * MT_ERR_UNSUPPORTED in a build without oneDNN; the native kernels run where oneDNN has no
 * implementation); MT_CONV_BACKEND_AUTO times the three once per shape, pass and thread count
 * (cached) and keeps the fastest: like cudnn.benchmark, a timed choice may differ between runs, and
 * with it the rounding, so it is not the default (resumed runs end bit for bit where whole ones
 * do). A process-wide setting, like PyTorch's torch.backends flags; *previous (may be NULL) gets
 * the old one. */
typedef enum {
  MT_CONV_BACKEND_AUTO = 0,
  MT_CONV_BACKEND_NATIVE = 1,
  MT_CONV_BACKEND_ONEDNN = 2,
  MT_CONV_BACKEND_ONEDNN_NCHW = 3
} mt_conv_backend;
mt_status mt_cpu_set_conv_backend(int backend, int *previous);
int mt_cpu_get_conv_backend(void);
int mt_cpu_onednn_available(void); /* 1 when built with oneDNN (libdnnl-dev) */

/* memory */
mt_status mt_memory_stats_get(int device, mt_memory_stats *out);
mt_status mt_memory_reset_peak(int device);
int64_t mt_memory_allocated(int device); /* cheap; -1 if the device is unknown */

/* MT_OK when every backend compiled in (CPU, and CUDA where built) fills every entry of its
 * op table; else MT_ERR_INTERNAL naming the backend and the first missing entry. */
mt_status mt_backend_check(void);

/* CUDA (every function answers MT_ERR_CUDA with a clear message in a build without it) */
int mt_cuda_is_compiled(void);
int mt_cuda_device_count(void); /* 0 without CUDA or without a device */
mt_status mt_cuda_synchronize(int device);
mt_status mt_cuda_empty_cache(int device);
/* the stream the library's kernels on `device` run on (a cudaStream_t), for interop: NCCL in
 * the distributed layer orders its work after it */
mt_status mt_cuda_stream(int device, void **out);
mt_status mt_cuda_device_name(int device, char *buf, int len);
/* CUDA numerics and cuDNN convolution algorithms (csrc/cuda/settings.c). Process-wide
 * settings, like PyTorch's torch.backends flags: they describe how the whole run computes.
 * TF32: off by default, so float32 GEMMs and convolutions use plain fp32 FMA and stay within
 * float rounding of the CPU. On, cuBLAS (CUBLAS_COMPUTE_32F_FAST_TF32) and cuDNN (tensor-op
 * math) may round float32 inputs to TF32 (10-bit mantissa) on tensor cores. *previous (may be
 * NULL) receives the old setting. Convolution algorithms: MT_CONV_ALGO_HEURISTIC (default) takes
 * cuDNN's heuristic ranking; MT_CONV_ALGO_SEARCH times the candidates once per convolution
 * (shape, layout, dtype, geometry, direction) and keeps the fastest. Both skip algorithms whose
 * workspace exceeds workspace_mb MiB (default 1024; 0 allows only workspace-free ones). Choices
 * are cached per setting, so changing a setting never reuses a choice made under another. */
typedef enum { MT_CONV_ALGO_HEURISTIC = 0, MT_CONV_ALGO_SEARCH = 1 } mt_conv_algo_mode;
mt_status mt_cuda_set_allow_tf32(int allow, int *previous);
int mt_cuda_get_allow_tf32(void);
mt_status mt_cuda_set_conv_algorithm(int mode, double workspace_mb);
mt_status mt_cuda_get_conv_algorithm(int *mode, double *workspace_mb);

/* tensor lifetime and metadata */
mt_status mt_tensor_new(mt_tensor **out, int dtype, int device, int ndim, const int64_t *sizes);
mt_status mt_tensor_new_pinned(mt_tensor **out, int dtype, int ndim, const int64_t *sizes);
void mt_tensor_retain(mt_tensor *t);
void mt_tensor_release(mt_tensor *t);
int mt_tensor_ndim(const mt_tensor *t);
int64_t mt_tensor_size(const mt_tensor *t, int dim);
int64_t mt_tensor_stride(const mt_tensor *t, int dim);
int64_t mt_tensor_offset(const mt_tensor *t); /* in elements */
int64_t mt_tensor_numel(const mt_tensor *t);
int mt_tensor_dtype(const mt_tensor *t);
int mt_tensor_device(const mt_tensor *t);
int mt_tensor_is_contiguous(const mt_tensor *t);
/* 1 for a 4-d N x C x H x W tensor stored channels-last (strides H*W*C, 1, W*C, C), not also contiguous
 * unless its size-1 dimensions have exactly those strides too (a 1-channel channels-last image) */
int mt_tensor_is_channels_last(const mt_tensor *t);
int mt_tensor_is_pinned(const mt_tensor *t);
void *mt_tensor_data(const mt_tensor *t);            /* address of the first element */
int64_t mt_tensor_storage_numel(const mt_tensor *t); /* elements in the storage */
const void *mt_tensor_storage_key(const mt_tensor *t);

/* views: new handles sharing storage */
mt_status mt_tensor_view(mt_tensor **out, const mt_tensor *t, int ndim, const int64_t *sizes);
mt_status mt_tensor_as_strided(mt_tensor **out, const mt_tensor *t, int ndim, const int64_t *sizes,
                               const int64_t *strides, int64_t offset);
mt_status mt_tensor_narrow(mt_tensor **out, const mt_tensor *t, int dim, int64_t start, int64_t length);
mt_status mt_tensor_select(mt_tensor **out, const mt_tensor *t, int dim, int64_t index);
mt_status mt_tensor_transpose(mt_tensor **out, const mt_tensor *t, int dim0, int dim1);
mt_status mt_tensor_permute(mt_tensor **out, const mt_tensor *t, int ndim, const int *dims);
mt_status mt_tensor_expand(mt_tensor **out, const mt_tensor *t, int ndim, const int64_t *sizes);
mt_status mt_tensor_squeeze(mt_tensor **out, const mt_tensor *t, int dim); /* dim < 0: all size-1 dims */
mt_status mt_tensor_unsqueeze(mt_tensor **out, const mt_tensor *t, int dim);
mt_status mt_tensor_unfold(mt_tensor **out, const mt_tensor *t, int dim, int64_t size, int64_t step);

/* in-place metadata */
mt_status mt_tensor_resize(mt_tensor *t, int ndim, const int64_t *sizes); /* keeps storage if large enough */
mt_status mt_tensor_set(mt_tensor *t, const mt_tensor *src);              /* t becomes a view of src */

/* storages as Torch7's Storage objects (csrc/core/storage.c). Each hands back, or takes, a 1-d
 * tensor covering its whole storage from offset 0; Lua's Storage object holds that tensor. */
enum { MT_STORAGE_MEMORY = 0, MT_STORAGE_VIEW = 1, MT_STORAGE_FILE = 2 };
int mt_storage_kind(const mt_tensor *t); /* what t's storage is: one of MT_STORAGE_* */
/* a new storage over elements [offset, offset+numel) (0-based) of t's storage, holding it alive */
mt_status mt_storage_view(mt_tensor **out, const mt_tensor *t, int64_t offset, int64_t numel);
/* resize t's storage in place (every tensor on it sees the new memory), keeping the common
 * prefix; t becomes the 1-d tensor over all of it. Views and file maps refuse. */
mt_status mt_storage_resize(mt_tensor *t, int64_t numel);
/* a storage mapping file `path`: shared = 1 maps it read-write and writes through (creating the
 * file, or extending it to numel elements); 2 does the same and removes the file when the
 * storage is freed (Torch7's shared-memory storages in /dev/shm); 0 maps a private copy-on-write
 * view of a readable file. numel < 0: as many elements as the file holds. Released by munmap. */
mt_status mt_storage_map_file(mt_tensor **out, const char *path, int dtype, int shared, int64_t numel);

/* single elements (any device; a CUDA read synchronizes) */
mt_status mt_tensor_get_item(const mt_tensor *t, const int64_t *index, double *out);
mt_status mt_tensor_set_item(mt_tensor *t, const int64_t *index, double v);

/* pointwise */
mt_status mt_fill(mt_tensor *t, double v);
mt_status mt_copy(mt_tensor *dst, const mt_tensor *src); /* any dtypes/devices; src broadcast to dst or same numel */
mt_status mt_unary(int op, mt_tensor *out, const mt_tensor *a, double p1, double p2);
mt_status mt_binary(int op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha);
mt_status mt_addcmul(mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b, const mt_tensor *c);
mt_status mt_addcdiv(mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b, const mt_tensor *c);
mt_status mt_masked_fill(mt_tensor *t, const mt_tensor *mask, double v);
mt_status mt_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask);
mt_status mt_arange(mt_tensor *t, double start, double step); /* t[i] = start + i*step, row-major order */

/* random */
mt_status mt_random_uniform(mt_tensor *t, mt_generator *g, double lo, double hi);
mt_status mt_random_normal(mt_tensor *t, mt_generator *g, double mean, double std);
mt_status mt_random_bernoulli(mt_tensor *t, mt_generator *g, double p);

/* ---- issue 13, math: scans (csrc/core/ops_scan.c) ----
 * cumulative sum / product along dim (0-based); out gets a's sizes and dtype (integers wrap,
 * floats accumulate in double); out may be a itself */
mt_status mt_cumsum(mt_tensor *out, const mt_tensor *a, int dim);
mt_status mt_cumprod(mt_tensor *out, const mt_tensor *a, int dim);

/* reductions: dim < 0 reduces everything to a 0-d tensor */
mt_status mt_reduce(int op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim, int keepdim, double p,
                    int64_t base);
/* the full reduction as a number; ARGMAX/ARGMIN give the 0-based flat (row-major) index */
mt_status mt_reduce_all_value(int op, const mt_tensor *a, double p, double *out);

/* linear algebra (out may alias c) */
mt_status mt_addmm(mt_tensor *out, double beta, const mt_tensor *c, double alpha, const mt_tensor *a,
                   const mt_tensor *b);
mt_status mt_baddbmm(mt_tensor *out, double beta, const mt_tensor *c, double alpha, const mt_tensor *a,
                     const mt_tensor *b);
mt_status mt_addmv(mt_tensor *out, double beta, const mt_tensor *c, double alpha, const mt_tensor *m,
                   const mt_tensor *v);
mt_status mt_dot(const mt_tensor *a, const mt_tensor *b, double *out);

/* LAPACK (csrc/core/ops_lapack.c): Torch7's torch.gesv & co. on float32/float64 CPU matrices
 * (a CUDA tensor gets MT_ERR_UNSUPPORTED). Results are resized and come back column-major
 * (strides 1, rows), as Torch7's do; a result that shares memory with an input is computed
 * aside and written into it at the end (Torch7's in-place forms, e.g. gesv(b, a, b, a)). B may
 * be 1-d (one column). Option characters are Torch7's ('U'/'L', 'N'/'T', 'N'/'V', 'S'/'A',
 * 'L'/'R'). LAPACK's info > 0 (singular, not positive definite, no convergence) is an error
 * naming the function and the index. gels: rb has max(m, n) rows, the solution in the first n.
 * eig: e is n x 2 (real, imaginary); v (jobvr 'V') packs complex pairs as LAPACK does. symeig
 * and eig leave v alone (may be NULL) with 'N'. svd: job 'S' U m x k, V n x k; 'A' m x m, n x n
 * (k = min(m, n)); V is row-major. pstrf: piv int32, 1-based; tol < 0 picks LAPACK's default. */
mt_status mt_gesv(mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a);
mt_status mt_trtrs(mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a, char uplo, char trans,
                   char diag);
mt_status mt_gels(mt_tensor *rb, mt_tensor *ra, const mt_tensor *b, const mt_tensor *a);
mt_status mt_inverse(mt_tensor *out, const mt_tensor *a);
mt_status mt_potrf(mt_tensor *out, const mt_tensor *a, char uplo);
mt_status mt_potrs(mt_tensor *out, const mt_tensor *b, const mt_tensor *chol, char uplo);
mt_status mt_potri(mt_tensor *out, const mt_tensor *chol, char uplo);
mt_status mt_pstrf(mt_tensor *out, mt_tensor *piv, const mt_tensor *a, char uplo, double tol);
mt_status mt_qr(mt_tensor *q, mt_tensor *r, const mt_tensor *a);
mt_status mt_geqrf(mt_tensor *out, mt_tensor *tau, const mt_tensor *a);
mt_status mt_orgqr(mt_tensor *out, const mt_tensor *a, const mt_tensor *tau);
mt_status mt_ormqr(mt_tensor *out, const mt_tensor *a, const mt_tensor *tau, const mt_tensor *c, char side, char trans);
mt_status mt_eig(mt_tensor *e, mt_tensor *v, const mt_tensor *a, char jobvr);
mt_status mt_symeig(mt_tensor *e, mt_tensor *v, const mt_tensor *a, char jobz, char uplo);
mt_status mt_svd(mt_tensor *u, mt_tensor *s, mt_tensor *v, const mt_tensor *a, char job);

/* structure and indexing */
mt_status mt_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim);
mt_status mt_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
mt_status mt_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha, int64_t base);
mt_status mt_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base);
mt_status mt_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base);
mt_status mt_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, int64_t base);
mt_status mt_scatter_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base);
mt_status mt_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending, int64_t base);
mt_status mt_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim, int largest,
                  int sorted, int64_t base);
/* torch.mode and torch.conv2/xcorr2/conv3/xcorr3 (csrc/core/ops_mode.c, ops_tconv.c).
 * mode: values (src's dtype) and indices (int64, base-based) get src's sizes with dim's set to 1:
 * the most frequent value of each line (the smallest among equally frequent ones) and the
 * position of its last occurrence. tensor_conv: nspatial 2 or 3; x and k (one dtype) are
 * (ns, ns)-d (one image, one kernel), (ns+1, ns+1)-d (plane i with kernel i) or (ns+1, ns+2)-d
 * (out[q] = sum over p of x[p] with k[q][p]); full 'F' or valid 'V'; flip 1 convolves, 0
 * cross-correlates. out is resized. */
mt_status mt_mode(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int64_t base);
mt_status mt_tensor_conv(mt_tensor *out, const mt_tensor *x, const mt_tensor *k, int nspatial, int full, int flip);
/* nn: convolution and pooling (csrc/nn/conv*.c, pool*.c) */
/* NCHW, float32/float64 (pooling: any float dtype), CPU; sizes as in Torch7/PyTorch.
 * backward_params accumulates scale * gradient into gradWeight/gradBias (either bias may be NULL).
 * backward_input takes the input for its size. Max-pool indices: int64, 0-based within a plane. */
mt_status mt_conv2d_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight, const mt_tensor *bias,
                            int strideW, int strideH, int padW, int padH, int dilationW, int dilationH, int groups);
mt_status mt_conv2d_backward_input(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *gradOutput,
                                   const mt_tensor *weight, int strideW, int strideH, int padW, int padH, int dilationW,
                                   int dilationH, int groups);
mt_status mt_conv2d_backward_params(mt_tensor *gradWeight, mt_tensor *gradBias, const mt_tensor *input,
                                    const mt_tensor *gradOutput, double scale, int strideW, int strideH, int padW,
                                    int padH, int dilationW, int dilationH, int groups);
mt_status mt_maxpool2d_forward(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, int kW, int kH, int dW,
                               int dH, int padW, int padH, int ceil_mode);
mt_status mt_maxpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *indices,
                                const mt_tensor *input, int kW, int kH, int dW, int dH, int padW, int padH,
                                int ceil_mode);
mt_status mt_avgpool2d_forward(mt_tensor *out, const mt_tensor *input, int kW, int kH, int dW, int dH, int padW,
                               int padH, int ceil_mode, int count_include_pad);
mt_status mt_avgpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int kW,
                                int kH, int dW, int dH, int padW, int padH, int ceil_mode, int count_include_pad);
mt_status mt_adaptive_avgpool2d_forward(mt_tensor *out, const mt_tensor *input, int oW, int oH);
mt_status mt_adaptive_avgpool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input);
/* max over the windows rows [hs, he) x columns [ws, we) (0-based; int64 P x oH and P x oW, P = 1 or
 * the number of planes) of each H x W plane of a 3-d/4-d input (csrc/nn/window_pool.c): adaptive
 * and fractional max pooling. indices: int64 flat 1-based positions in the whole input. */
mt_status mt_nn_window_maxpool2d(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, const mt_tensor *hs,
                                 const mt_tensor *he, const mt_tensor *ws, const mt_tensor *we);
/* 3-d convolution columns (csrc/nn/vol.c): input C x T x H x W (one sample) -> col
 * (C*kT*kH*kW) x (oT*oH*oW), rows ordered (c, kt, ky, kx) like an O x C x kT x kH x kW weight,
 * zeros where a tap falls in the padding; col2vol is its adjoint: out (resized to C x T x H x W)
 * = the columns summed back into the volume. 3-d max pooling (csrc/nn/vol_pool.c): input
 * [N x] C x T x H x W, Torch7's ceil mode; indices int64, 0-based within each T x H x W volume. */
mt_status mt_nn_vol2col(mt_tensor *col, const mt_tensor *input, int kT, int kW, int kH, int dT, int dW, int dH,
                        int padT, int padW, int padH, int dilT, int dilW, int dilH);
mt_status mt_nn_col2vol(mt_tensor *out, const mt_tensor *col, int64_t C, int64_t T, int64_t H, int64_t W, int kT,
                        int kW, int kH, int dT, int dW, int dH, int padT, int padW, int padH, int dilT, int dilW,
                        int dilH);
mt_status mt_nn_maxpool3d_forward(mt_tensor *out, mt_tensor *indices, const mt_tensor *input, int kT, int kW, int kH,
                                  int dT, int dW, int dH, int padT, int padW, int padH, int dilT, int dilW, int dilH,
                                  int ceil_mode);
mt_status mt_nn_maxpool3d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *indices,
                                   const mt_tensor *input, int kT, int kW, int kH, int dT, int dW, int dH, int padT,
                                   int padW, int padH, int dilT, int dilW, int dilH, int ceil_mode);
/* 3-d average pooling (csrc/nn/vol_pool.c): input [N x] C x T x H x W, Torch7's ceil mode; the
 * divisor counts padding cells when count_include_pad is set, never the part of a ceil-mode
 * window beyond the padded input. The backward reads input for its size only. */
mt_status mt_nn_avgpool3d_forward(mt_tensor *out, const mt_tensor *input, int kT, int kW, int kH, int dT, int dW,
                                  int dH, int padT, int padW, int padH, int ceil_mode, int count_include_pad);
mt_status mt_nn_avgpool3d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int kT,
                                   int kW, int kH, int dT, int dW, int dH, int padT, int padW, int padH, int ceil_mode,
                                   int count_include_pad);
/* The weight gradient of a 3-d convolution on the CPU for float32 and float64 (csrc/cpu/nn_vol_grad.c):
 * gradWeight (O x C x kT x kH x kW) += scale * dL/dweight for input x (N x C x T x H x W) and
 * gradOutput dy (N x O x oT x oH x oW), all contiguous and of one dtype. *ran = 0 (and MT_OK) for
 * any other device, dtype or layout: the caller then takes the vol2col + GEMM path. */
mt_status mt_nn_conv3d_grad_weight(mt_tensor *gradWeight, const mt_tensor *input, const mt_tensor *gradOutput,
                                   double scale, int dT, int dW, int dH, int padT, int padW, int padH, int dilT,
                                   int dilW, int dilH, int *ran);
/* float32 3-d convolution through oneDNN on the CPU (csrc/cpu/nn_vol_onednn.c), the fast path of
 * nn.VolumetricConvolution: pass 0 forward (out, resized, = conv(a = input, b = weight) + bias),
 * 1 gradInput (out, already of the input's size, from a = gradOutput, b = weight), 2 weight
 * gradients (out += scale * dW, out2 += scale * dbias when given, from a = input, b = gradOutput).
 * 5-d contiguous float32 CPU tensors; *ran = 0 (and MT_OK) where oneDNN is absent or has no
 * implementation for the shape: the caller then takes the vol2col path. */
mt_status mt_nn_conv3d_onednn(int pass, mt_tensor *out, mt_tensor *out2, const mt_tensor *a, const mt_tensor *b,
                              const mt_tensor *bias, double scale, int dT, int dW, int dH, int padT, int padW, int padH,
                              int dilT, int dilW, int dilH, int *ran);
/* nn: normalization, activations, softmax, losses (csrc/nn/batchnorm.c, activation.c, loss.c) */
/* CPU, float dtypes. Activations: forward may be in place (out == input); backward takes the
 * input (ReLU, LeakyReLU) or the output (Sigmoid, Tanh) as `saved`. */
enum { MT_ACT_RELU = 0, MT_ACT_LEAKY_RELU = 1, MT_ACT_SIGMOID = 2, MT_ACT_TANH = 3, MT_ACT_ELU = 4 };
mt_status mt_nn_activation_forward(mt_tensor *out, const mt_tensor *input, int kind, double alpha);
mt_status mt_nn_activation_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *saved, int kind,
                                    double alpha);
/* PReLU (csrc/nn/param_activation.c): weight holds 1 shared slope or one per plane (dim 1, or 0
 * of a vector). Backward writes gradInput (may be NULL; may be gradOutput) and adds scale *
 * dL/dweight to gradWeight (may be NULL). RReLU in training: noise (resized to the input) gets
 * slope 1 where x > 0, else a draw from U(lower, upper) by g (counter offset + i, g->offset
 * advanced by numel); out = x * noise, may be the input. */
mt_status mt_nn_prelu_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight);
mt_status mt_nn_prelu_backward(mt_tensor *gradInput, mt_tensor *gradWeight, const mt_tensor *gradOutput,
                               const mt_tensor *input, const mt_tensor *weight, double scale);
mt_status mt_nn_rrelu_forward(mt_tensor *out, mt_tensor *noise, const mt_tensor *input, mt_generator *g, double lower,
                              double upper);
/* LP pooling as Torch7's nn.SpatialLPPooling: (sum over each window of x^p)^(1/p), 3-d/4-d input,
 * no padding; backward takes the forward's output (csrc/nn/lppool.c) */
mt_status mt_nn_lppool2d_forward(mt_tensor *out, const mt_tensor *input, double p, int kW, int kH, int dW, int dH);
mt_status mt_nn_lppool2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input,
                                  const mt_tensor *output, double p, int kW, int kH, int dW, int dH);
/* 2-d padding of the last two dims of a 3-d/4-d input by pads left, right, top, bottom
 * (csrc/nn/padding.c): zeros (negative pads crop), reflection (pads < size) or replication */
enum { MT_PAD_ZERO = 0, MT_PAD_REFLECT = 1, MT_PAD_REPLICATE = 2 };
mt_status mt_nn_pad2d_forward(mt_tensor *out, const mt_tensor *input, int mode, int l, int r, int t, int b);
mt_status mt_nn_pad2d_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *input, int mode,
                               int l, int r, int t, int b);
/* Batch norm over dim 1 of an N x C [x ...] input. train: batch statistics (biased variance
 * normalises; running stats, when given, move by momentum with the unbiased variance) saved in
 * save_mean/save_invstd (resized to C); eval: running stats. weight/bias may be NULL. Backward
 * accumulates scale * gradient into gradWeight/gradBias (each may be NULL; so may gradInput). */
mt_status mt_nn_batchnorm_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight,
                                  const mt_tensor *bias, mt_tensor *running_mean, mt_tensor *running_var,
                                  mt_tensor *save_mean, mt_tensor *save_invstd, int train, double momentum, double eps);
mt_status mt_nn_batchnorm_backward(mt_tensor *gradInput, mt_tensor *gradWeight, mt_tensor *gradBias,
                                   const mt_tensor *input, const mt_tensor *gradOutput, const mt_tensor *weight,
                                   const mt_tensor *running_mean, const mt_tensor *running_var,
                                   const mt_tensor *save_mean, const mt_tensor *save_invstd, int train, double scale,
                                   double eps);
/* Stats and parameters may be float32 for a float16/bfloat16 input (else the input's dtype).
 * Fused batch norm: out = relu(bn(input) + residual) with residual (input's size) optional (NULL)
 * and the ReLU applied when relu != 0, rounded as the separate ops round (bn output, then the sum,
 * in the dtype). Backward takes the forward's output (for the ReLU mask; NULL without relu) and
 * writes gradInput and gradResidual (each may be NULL). A channels-last 4-d input gives
 * channels-last results. */
mt_status mt_nn_batchnorm_act_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *residual,
                                      const mt_tensor *weight, const mt_tensor *bias, mt_tensor *running_mean,
                                      mt_tensor *running_var, mt_tensor *save_mean, mt_tensor *save_invstd, int train,
                                      double momentum, double eps, int relu);
mt_status mt_nn_batchnorm_act_backward(mt_tensor *gradInput, mt_tensor *gradResidual, mt_tensor *gradWeight,
                                       mt_tensor *gradBias, const mt_tensor *input, const mt_tensor *output,
                                       const mt_tensor *gradOutput, const mt_tensor *weight,
                                       const mt_tensor *running_mean, const mt_tensor *running_var,
                                       const mt_tensor *save_mean, const mt_tensor *save_invstd, int train,
                                       double scale, double eps, int relu);
/* (log-)softmax along dim (0-based); backward takes the forward's output. */
mt_status mt_nn_softmax_forward(mt_tensor *out, const mt_tensor *input, int dim, int log);
mt_status mt_nn_softmax_backward(mt_tensor *gradInput, const mt_tensor *gradOutput, const mt_tensor *output, int dim,
                                 int log);
/* Negative log-likelihood of log-probabilities (C or N x C) at class targets (`base`-based, any
 * dtype holding integers), with optional class weights (C) and label smoothing eps: per sample
 * (1-eps) * -w[t] logp[t] + eps/C * sum_c -w[c] logp[c]; the sum is divided by the total weight
 * of the targets when size_average. Backward writes d loss / d input (times scale). */
mt_status mt_nn_class_nll_forward(double *loss, double *total_weight, const mt_tensor *input, const mt_tensor *target,
                                  const mt_tensor *weights, int64_t base, int size_average, double smoothing);
mt_status mt_nn_class_nll_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target,
                                   const mt_tensor *weights, int64_t base, int size_average, double smoothing,
                                   double scale);
/* Cross-entropy of raw scores (C or N x C): LogSoftMax then ClassNLL in one op, with the bits of
 * that composition (mt_nn_softmax_forward with log, then mt_nn_class_nll_*). Samples whose target
 * equals ignore_index add nothing. Forward writes each row's log-sum-exp into lse (resized to N,
 * float64, on the input's device); backward takes it back with the same input and target. */
mt_status mt_nn_cross_entropy_forward(double *loss, double *total_weight, mt_tensor *lse, const mt_tensor *input,
                                      const mt_tensor *target, const mt_tensor *weights, int64_t base,
                                      double ignore_index, int size_average, double smoothing);
mt_status mt_nn_cross_entropy_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *lse,
                                       const mt_tensor *target, const mt_tensor *weights, int64_t base,
                                       double ignore_index, int size_average, double smoothing, double scale);
/* nn.Normalize: each row of a vector or N x D input divided by (sum |x|^p + eps)^(1/p), or by
 * max |x| + eps for p = INFINITY (csrc/nn/normalize.c); backward takes the forward's input. */
mt_status mt_nn_normalize_forward(mt_tensor *out, const mt_tensor *input, double p, double eps);
mt_status mt_nn_normalize_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *gradOutput, double p,
                                   double eps);
/* mean (size_average) or sum of squared differences; backward: 2 (x - t) [/ n] * scale */
mt_status mt_nn_mse_forward(double *loss, const mt_tensor *input, const mt_tensor *target, int size_average);
mt_status mt_nn_mse_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target, int size_average,
                             double scale);
/* SmoothL1 (Huber, threshold 1): mean or sum of 0.5 d^2 (|d| < 1) or |d| - 0.5, d = input - target;
 * backward: clamp(d, -1, 1) [/ n] * scale */
mt_status mt_nn_smoothl1_forward(double *loss, const mt_tensor *input, const mt_tensor *target, int size_average);
mt_status mt_nn_smoothl1_backward(mt_tensor *gradInput, const mt_tensor *input, const mt_tensor *target,
                                  int size_average, double scale);
/* optim: fused optimizer steps (csrc/nn/optim*.c) */
/* One fused pass over a contiguous flat parameter vector x; every state tensor has x's dtype
 * and numel. lr arrives already decayed/scheduled. Optional (NULL) lrs/wds are per-element
 * learning-rate factors and weight decays (Torch7's learningRates/weightDecays).
 * Mixed precision (every step): x is then the master copy (float32) and dx may have another
 * floating dtype (the model's, float16 or bfloat16); dx is multiplied by grad_scale as it is
 * read (1 / loss scale, times a clipping factor; 1 for a plain step), and copy (NULL, or a
 * contiguous tensor of dx's dtype with x's numel on x's device, usually the model's own
 * parameters) receives the updated x rounded to its dtype in the same pass. */
mt_status mt_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs, const mt_tensor *wds,
                      double lr, double momentum, double dampening, double weight_decay, int nesterov, int first,
                      double grad_scale, mt_tensor *copy);
/* decoupled = 0: Torch7's Adam (L2 decay in the gradient); 1: AdamW. t: step count, >= 1 */
mt_status mt_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double lr, double beta1,
                       double beta2, double eps, double weight_decay, int64_t t, int decoupled, double grad_scale,
                       mt_tensor *copy);
/* Layer-wise steps over sorted disjoint segments [offset, offset+length) of x; segments with
 * exclude[s] != 0 get trust ratio 1 and no weight decay. trust_out (nseg doubles) may be NULL.
 * The trust ratios see the scaled gradient (dx * grad_scale). */
mt_status mt_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg, const int64_t *seg_offset,
                       const int64_t *seg_length, const uint8_t *seg_exclude, double lr, double momentum,
                       double weight_decay, double eta, double eps, int first, double *trust_out, double grad_scale,
                       mt_tensor *copy);
mt_status mt_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                       const int64_t *seg_offset, const int64_t *seg_length, const uint8_t *seg_exclude, double lr,
                       double beta1, double beta2, double eps, double weight_decay, int64_t t, double max_trust,
                       double *trust_out, double grad_scale, mt_tensor *copy);
/* One pass over a floating tensor (a flat gradient, before a step under loss scaling): the
 * number of its elements that are inf or NaN, and the sum of squares of the finite ones in
 * float64 (for clipping by global norm). */
mt_status mt_grad_check(const mt_tensor *g, int64_t *nonfinite, double *sumsq);
/* io: checkpoint files (csrc/io/) */
/* safetensors files: [u64 LE header length][JSON header][raw LE data]. Saving writes
 * path.tmp.<pid>, fsyncs and renames it over path, so a failed save leaves the old file; it
 * first removes the path.tmp.<pid> of writers that died mid-save (pid gone, temp unlocked).
 * Metadata is string key/value pairs (the format's "__metadata__"). Reading checks every
 * offset/size against the file and dtype*shape at open; tensors are then read by index. */
typedef struct mt_safetensors mt_safetensors;
mt_status mt_safetensors_save(const char *path, int n, const char *const *names, mt_tensor *const *tensors, int nmeta,
                              const char *const *meta_keys, const char *const *meta_values);
mt_status mt_safetensors_open(mt_safetensors **out, const char *path);
void mt_safetensors_close(mt_safetensors *f);
int mt_safetensors_count(const mt_safetensors *f);
const char *mt_safetensors_name(const mt_safetensors *f, int i);    /* i in [0, count) */
int mt_safetensors_find(const mt_safetensors *f, const char *name); /* index, or -1 */
mt_status mt_safetensors_info(const mt_safetensors *f, int i, int *dtype, int *ndim, int64_t *sizes);
mt_status mt_safetensors_read(mt_safetensors *f, int i, mt_tensor **out); /* new CPU tensor */
int mt_safetensors_meta_count(const mt_safetensors *f);
const char *mt_safetensors_meta_key(const mt_safetensors *f, int i);
const char *mt_safetensors_meta_value(const mt_safetensors *f, int i);
/* Torch7 .t7 files (csrc/io/t7.c), read safely: mt_t7_parse checks the bytes of one object
 * (from byte `start`; ascii: Torch7's text mode; long_size: 8, or 4 for files from 32-bit
 * longs) and gives a flat list of nodes. Every count is checked against the bytes left, nesting
 * is limited, references must name an object already started, tensors must lie inside their
 * storage. Functions are not loaded, only recorded (FUNCTION: their bytecode's byte range):
 * running them is the caller's choice. Errors (MT_ERR_FORMAT) read "t7: <what>: byte N: ...".
 * Strings and class names are byte ranges [str, str+len) of the input; storages are 1-d CPU
 * tensors owned by the handle (mt_t7_storage, borrowed). */
enum {
  MT_T7_NIL = 0,
  MT_T7_NUMBER = 1,
  MT_T7_STRING = 2,
  MT_T7_TABLE = 3,
  MT_T7_OBJECT = 4,
  MT_T7_BOOLEAN = 5,
  MT_T7_REF = 6,
  MT_T7_TENSOR = 7,
  MT_T7_STORAGE = 8,
  MT_T7_FUNCTION = 9
};
typedef struct mt_t7_node {
  int32_t kind;     /* MT_T7_* */
  int32_t dtype;    /* TENSOR, STORAGE: the mt_dtype; else -1 */
  int32_t cuda;     /* TENSOR, STORAGE: 1 when the file named a torch.Cuda* class */
  int32_t ndim;     /* TENSOR */
  double number;    /* NUMBER; BOOLEAN: 1 or 0; FUNCTION: the file's tag (6, 7 or 8) */
  int64_t offset;   /* where the item starts in the input */
  int64_t str, len; /* STRING: its bytes; OBJECT, TENSOR, STORAGE: the class name; FUNCTION: bytecode */
  /* TABLE: children[first .. first+count) are key, value, key, value...; OBJECT: one child, its
   * field table; FUNCTION: one child, its upvalue table; TENSOR: one child, its STORAGE (or a
   * REF to one), or none; REF: `first` is the node referred to; STORAGE: `first` is private */
  int64_t first, count;
  int64_t dims;           /* TENSOR: sizes at dims[dims .. dims+ndim), then the strides */
  int64_t storage_offset; /* TENSOR: 0-based, in elements */
  int64_t numel;          /* STORAGE */
} mt_t7_node;
typedef struct mt_t7 mt_t7;
mt_status mt_t7_parse(mt_t7 **out, const void *buf, size_t len, size_t start, int ascii, int long_size,
                      const char *what);
void mt_t7_free(mt_t7 *f);
int64_t mt_t7_count(const mt_t7 *f); /* nodes; node 0 is the object read */
int64_t mt_t7_end(const mt_t7 *f);   /* the byte after the object */
const mt_t7_node *mt_t7_nodes(const mt_t7 *f);
const int64_t *mt_t7_children(const mt_t7 *f);
const int64_t *mt_t7_dims(const mt_t7 *f);
mt_tensor *mt_t7_storage(const mt_t7 *f, int64_t node); /* a STORAGE node's 1-d tensor; NULL otherwise */
/* data: raw formats, images, shards, datasets, the in-memory cache and the loader (csrc/data/) */
/* IDX (MNIST family) and CIFAR binary. Files may be gzip-compressed (detected by zlib); the
 * parse functions take a file's bytes (so the fuzzers drive them) and `what` names the source
 * in error messages. IDX keeps its element type (u8, i8 -> i32, i16 -> i32, i32, f32, f64). */
mt_status mt_idx_parse(mt_tensor **out, const void *buf, size_t len, const char *what);
mt_status mt_idx_load(mt_tensor **out, const char *path);
/* CIFAR-10 (nlabels 1) or CIFAR-100 (nlabels 2: coarse, fine) records: images N x 3 x 32 x 32
 * uint8, labels N x nlabels int64 as stored (0-based) */
mt_status mt_cifar_parse(mt_tensor **images, mt_tensor **labels, const void *buf, size_t len, int nlabels,
                         const char *what);
mt_status mt_cifar_load(mt_tensor **images, mt_tensor **labels, const char *path, int nlabels);

/* images (csrc/data/image.c): JPEG through libjpeg-turbo, PNG through libpng. Decoding gives
 * H x W x 3 uint8 RGB: grayscale is expanded, CMYK/YCCK converted, alpha dropped. */
typedef enum mt_image_format { MT_IMAGE_UNKNOWN = 0, MT_IMAGE_JPEG = 1, MT_IMAGE_PNG = 2 } mt_image_format;
mt_status mt_image_info(const void *buf, size_t len, int *format, int *width, int *height, int *channels);
/* scale_denom 1, 2, 4 or 8: JPEGs are decoded at that fraction in the DCT domain (ceil of the
 * size); PNGs ignore it */
mt_status mt_image_decode(mt_tensor **out, const void *buf, size_t len, int scale_denom);
/* H x W x 3 or H x W uint8 (contiguous) -> a new 1-D uint8 tensor holding the file's bytes */
mt_status mt_image_encode(mt_tensor **out, const mt_tensor *image, int format, int quality);

/* per-sample transforms (csrc/data/transform.c). Training: RandomResizedCrop (area fraction
 * and log-uniform aspect ratio, 10 tries then a centre crop, as torchvision), flip, optional
 * colour jitter and PCA lighting (fb.resnet.torch); evaluation: shorter side to `resize`, centre
 * crop. Resampling is antialiased bilinear (a triangle filter widened by the downscale factor).
 * Random choices use Philox(seed, counter * 16 + k): a sample's result depends only on
 * (seed, counter), never on threads or timing. */
typedef struct mt_transform {
  int train;                               /* 1: random crop + augmentation, 0: resize + centre crop */
  int out_w, out_h;                        /* output size (224) */
  int resize;                              /* evaluation: shorter side before the centre crop (256) */
  double scale_min, scale_max;             /* crop area fraction (0.08, 1) */
  double ratio_min, ratio_max;             /* crop aspect ratio w/h (3/4, 4/3) */
  int hflip;                               /* training: flip with probability 1/2 */
  double brightness, contrast, saturation; /* colour jitter strengths (0.4 each in fb.resnet.torch); 0: off */
  double lighting;                         /* PCA lighting alphastd (0.1 in fb.resnet.torch); 0: off */
  int dct_scaling;                         /* let libjpeg-turbo decode at 1/2..1/8 when the crop stays >= the output */
  double mean[3], std[3];                  /* float/half output: (x / 255 - mean) / std per channel */
  int dtype;                               /* MT_U8 (no normalisation), MT_F32 or MT_F16 */
  int nhwc;                                /* 0: 3 x H x W, 1: H x W x 3 */
} mt_transform;
void mt_transform_defaults(mt_transform *t, int train); /* ImageNet values */
/* The crop a training transform takes from a width x height image (x, y, w, h in pixels) and
 * whether it flips; for evaluation, the centre crop in source pixels. */
mt_status mt_transform_crop(const mt_transform *t, int width, int height, uint64_t seed, uint64_t counter, int *x,
                            int *y, int *w, int *h, int *flip);
/* decode + transform one encoded image into dst (out_h * out_w * 3 elements of t->dtype).
 * *scratch is per-thread working memory, allocated on first use, freed by
 * mt_transform_scratch_free; `name` is used in error messages. */
mt_status mt_transform_apply(const mt_transform *t, const void *buf, size_t len, const char *name, uint64_t seed,
                             uint64_t counter, void *dst, void **scratch);
void mt_transform_scratch_free(void *scratch);
/* the same into a CPU tensor shaped 3 x out_h x out_w (or out_h x out_w x 3) of t->dtype */
mt_status mt_transform_image(mt_tensor *out, const mt_transform *t, const mt_tensor *bytes, uint64_t seed,
                             uint64_t counter);
/* antialiased bilinear resize of an H x W x C uint8 image to oh x ow (the transforms' resampler) */
mt_status mt_image_resize(mt_tensor **out, const mt_tensor *image, int ow, int oh);

/* packed shards (csrc/data/shard.c): one file holds a header, the encoded records back to back,
 * an index (offset, length, label, CRC-32 and name per record) and a names blob. A writer
 * writes path.tmp.<pid> and commit renames it over path (fsynced), so a shard either exists
 * whole or not at all; open checks the header, the index checksum and every record's bounds;
 * read checks the record's CRC-32. */
typedef struct mt_shard_writer mt_shard_writer;
mt_status mt_shard_writer_open(mt_shard_writer **out, const char *path);
mt_status mt_shard_writer_add(mt_shard_writer *w, const void *buf, size_t len, int32_t label, const char *name);
mt_status mt_shard_writer_commit(mt_shard_writer *w); /* frees w, also on failure */
void mt_shard_writer_abort(mt_shard_writer *w);       /* removes the temporary file, frees w */
typedef struct mt_shard mt_shard;
mt_status mt_shard_open(mt_shard **out, const char *path);
mt_status mt_shard_parse(mt_shard **out, const void *buf, size_t len, const char *name); /* from memory (copied) */
void mt_shard_close(mt_shard *s);
int64_t mt_shard_count(const mt_shard *s);
mt_status mt_shard_entry(const mt_shard *s, int64_t i, uint64_t *offset, uint32_t *length, int32_t *label,
                         const char **name);
mt_status mt_shard_read(const mt_shard *s, int64_t i, void *dst, size_t cap); /* exactly `length` bytes */

/* datasets (csrc/data/dataset.c): samples (label, name, where their encoded bytes live: a file
 * or a shard record) and class names. Labels are 0-based here; the loader's targets are 1-based. */
typedef struct mt_dataset mt_dataset;
mt_status mt_dataset_new(mt_dataset **out);
void mt_dataset_free(mt_dataset *d);
/* ImageFolder layout root/<class>/<file>: classes are the sorted subfolder names (appended after
 * the existing classes), files with one of the comma-separated extensions (case-insensitive)
 * sorted by name. An empty class folder is a warning, not an error (labels stay aligned). */
mt_status mt_dataset_add_folder(mt_dataset *d, const char *root, const char *extensions);
mt_status mt_dataset_add_shard(mt_dataset *d, const char *path); /* every record of a shard */
mt_status mt_dataset_add_file(mt_dataset *d, const char *path, int32_t label);
mt_status mt_dataset_add_class(mt_dataset *d, const char *name);
int64_t mt_dataset_size(const mt_dataset *d);
/* Put the samples in a fixed pseudo-random order drawn from seed (before caching: MT_ERR_ARG
 * once cached). Folders and shards list samples by class; a partitioned cache gives each rank a
 * contiguous block, which would then hold a few classes only. */
mt_status mt_dataset_shuffle(mt_dataset *d, uint64_t seed);
int mt_dataset_nclasses(const mt_dataset *d);
const char *mt_dataset_class(const mt_dataset *d, int i);
mt_status mt_dataset_sample(const mt_dataset *d, int64_t i, int32_t *label, const char **name);
mt_status mt_dataset_read(const mt_dataset *d, int64_t i, mt_tensor **out); /* encoded bytes, uint8 */
int mt_dataset_nwarnings(const mt_dataset *d);
const char *mt_dataset_warning(const mt_dataset *d, int i);

/* in-memory cache (csrc/data/cache.c). Rank `rank` of `world` owns the contiguous block of
 * samples [rank*n/world, (rank+1)*n/world) (replicated: every sample) and reads their encoded
 * bytes into one arena with `threads` readers. When they would exceed budget_bytes (0: no
 * limit) it fails with MT_ERR_MEMORY before reading anything, and the dataset stays streaming.
 * A sample that cannot be read (empty, missing, unreadable) does not fail the cache: it is left
 * out, listed (mt_dataset_cache_error, k < mt_dataset_cache_nerrors, by sample order) and a read
 * of it fails with that message, so the loader skips and names it; only a block none of whose
 * samples can be read fails. mt_dataset_partition_bytes counts an unstattable sample as 0. */
mt_status mt_dataset_partition_bytes(const mt_dataset *d, int rank, int world, int replicated, uint64_t *bytes);
mt_status mt_dataset_cache(mt_dataset *d, int rank, int world, int replicated, uint64_t budget_bytes, int threads);
void mt_dataset_cache_stats(const mt_dataset *d, int64_t *samples, uint64_t *bytes, double *seconds);
int64_t mt_dataset_cache_nerrors(const mt_dataset *d);
const char *mt_dataset_cache_error(const mt_dataset *d, int64_t k);

/* the loader (csrc/data/loader.c): a pool of decode threads fills whole batches ahead of the
 * trainer. Epoch e visits a permutation of the samples drawn from (seed, e); global batch k is
 * positions [k*B*world, (k+1)*B*world) of it and this rank takes its B-slice, so every rank has
 * the same number of batches and world x B matches one rank with batch world*B. The last batch
 * of an epoch may be smaller (never padded, never dropped unless drop_last). Partitioned:
 * each rank walks the permutation restricted to its cached block instead. */
typedef struct mt_loader_opts {
  int batch_size;
  int threads;  /* decode threads, >= 1 */
  int prefetch; /* batches prepared ahead, >= 1 */
  int shuffle;  /* 0: dataset order */
  int drop_last;
  int rank, world;
  int partitioned;
  int skip_bad; /* 1: skip undecodable samples (counted, named in the error log); 0: fail */
  int pinned;   /* page-locked batches (CUDA builds) for asynchronous copies */
  uint64_t seed;
} mt_loader_opts;
typedef struct mt_batch_info {
  int64_t epoch, index, nbatches; /* index: 0-based batch of the epoch */
  int64_t count, skipped;         /* samples delivered / skipped in this batch */
  double wait_seconds;            /* time next() blocked waiting for the decoders */
} mt_batch_info;
typedef struct mt_loader mt_loader;
mt_status mt_loader_new(mt_loader **out, mt_dataset *d, const mt_transform *t, const mt_loader_opts *o);
void mt_loader_free(mt_loader *l);
/* start epoch `epoch` (>= 1) at batch `first` (0-based, for exact resumption) */
mt_status mt_loader_start(mt_loader *l, int64_t epoch, int64_t first);
int64_t mt_loader_nbatches(const mt_loader *l);
/* the next batch: input count x 3 x H x W (or NHWC) of the transform's dtype, target count
 * int64 (1-based); both NULL after the epoch's last batch */
mt_status mt_loader_next(mt_loader *l, mt_tensor **input, mt_tensor **target, mt_batch_info *info);
/* skipped-sample messages not yet taken (file name and reason), oldest first; NULL when none.
 * The string stays valid until the next call. */
const char *mt_loader_take_error(mt_loader *l);

/* TensorBoard event files (csrc/io/tfevents.c): TFRecord framing (length, masked CRC-32C)
 * around Event protos written by hand: file_version first, then scalar summaries. The file is
 * dir/events.out.tfevents.<seconds>.<host>; every write is flushed. */
typedef struct mt_events mt_events;
mt_status mt_events_open(mt_events **out, const char *dir);
const char *mt_events_path(const mt_events *e);
/* wall_time: seconds since 1970, 0 for now; value is stored as a float (simple_value) */
mt_status mt_events_scalar(mt_events *e, const char *tag, double value, int64_t step, double wall_time);
void mt_events_close(mt_events *e);
uint32_t mt_crc32c(const void *buf, size_t len);
/* dist: the distributed layer (csrc/dist/), in its own library libmoontorch_dist.so so that
 * libmoontorch.so never needs MPI or NCCL. */
enum { MT_DIST_MPI = 1, MT_DIST_NCCL = 2 };
int mt_dist_transports(void); /* the MT_DIST_* bits this build was compiled with */
/* "Open MPI v4.1.4, ..." / "NCCL 2.x.y"; MT_ERR_UNSUPPORTED naming the fix when not compiled in */
mt_status mt_dist_transport_version(int transport, char *buf, int len);

/* Reduction ops and allreduce algorithms (the lists MT_DIST_REDS and MT_DIST_ALGS above);
 * mt_dist_red_name / mt_dist_alg_name give the names Lua uses ("sum", "ring", ...). */
enum { MT_DIST_REDS(MT__ENUM_ROW, ~) MT_NUM_RED };
enum { MT_DIST_ALGS(MT__ENUM_ROW, ~) MT_NUM_ALG };
const char *mt_dist_red_name(int op);  /* NULL when out of range */
const char *mt_dist_alg_name(int alg); /* NULL when out of range */
enum { MT_DIST_SPARSE_ALGS(MT__ENUM_ROW, ~) MT_NUM_SPARSE_ALG };
const char *mt_dist_sparse_alg_name(int alg); /* NULL when out of range */

/* A communicator over every process of the job. Under mpirun/srun it initialises MPI (thread
 * level MULTIPLE) and starts one communication thread; with no launcher, or in a build without
 * MPI, it serves one process. timeout: seconds any wait may last before it fails naming the
 * collective and the ranks it waited for (<= 0: 300). group_size: ranks per "node" for the
 * hierarchical algorithm (0: the ranks that share a host). */
typedef struct mt_dist mt_dist;
typedef struct mt_dist_work mt_dist_work;
mt_status mt_dist_init(mt_dist **out, double timeout, int group_size);
int mt_dist_rank(const mt_dist *d);
int mt_dist_size(const mt_dist *d);
int mt_dist_local_rank(const mt_dist *d); /* rank inside the node (host or group) */
int mt_dist_local_size(const mt_dist *d);
int mt_dist_node(const mt_dist *d); /* which node, 0-based */
int mt_dist_nodes(const mt_dist *d);
int mt_dist_launched(const mt_dist *d); /* 1 when MPI was initialised under a launcher */
mt_status mt_dist_set_timeout(mt_dist *d, double seconds);
/* the pipelining unit of ring, multicolor and hierarchical (bytes; default 256 KB) */
mt_status mt_dist_set_chunk_bytes(mt_dist *d, int64_t bytes);
/* 1: every collective first exchanges a small signature (kind, dtype, count, root, op) and
 * fails on every rank, naming both ranks' values, when they differ (the default). */
void mt_dist_set_check(mt_dist *d, int on);
/* Tell every peer this rank failed (msg is shown by each of them); the communicator is broken
 * afterwards. Peers waiting in a collective fail at once with "rank R failed: msg". */
mt_status mt_dist_fail(mt_dist *d, const char *msg);
/* Waits for queued work, then MPI_Finalize. A communicator freed without it (the process
 * ends after an error) tells its peers it left and does not finalize, so none of them hangs. */
mt_status mt_dist_finalize(mt_dist *d);
void mt_dist_free(mt_dist *d);
/* Collectives on contiguous tensors. With work == NULL the call blocks; otherwise it returns at
 * once with a handle (the tensors are retained until it completes). Work runs in issue order on
 * the communication thread, so every rank must issue the same collectives in the same order. */
mt_status mt_dist_barrier(mt_dist *d, mt_dist_work **work);
mt_status mt_dist_broadcast(mt_dist *d, mt_tensor *t, int root, mt_dist_work **work);
mt_status mt_dist_allreduce(mt_dist *d, mt_tensor *t, int op, int alg, mt_dist_work **work);
/* out holds size() * numel(in) elements, rank r's block at r * numel(in) */
mt_status mt_dist_allgather(mt_dist *d, mt_tensor *out, mt_tensor *in, mt_dist_work **work);
/* in holds size() * numel(out) elements; rank r receives the reduction of block r */
mt_status mt_dist_reduce_scatter(mt_dist *d, mt_tensor *out, mt_tensor *in, int op, mt_dist_work **work);
/* Sparse allreduce: out (float32, n elements, CPU, every rank) := the sum (op SUM) or average
 * (AVG) over the ranks of each rank's pairs, scattered: idx (int32, 0-based into out; -1 marks
 * padding and is skipped) and val (float32, as many as idx); the number of pairs may differ
 * between ranks. alg: MT_SPARSE_* above (the nodes are mt_dist_init's). Every rank ends with
 * the same bits; the algorithms add in different orders (rank order, or node by node). */
mt_status mt_dist_sparse_allreduce(mt_dist *d, mt_tensor *out, mt_tensor *idx, mt_tensor *val, int op, int alg,
                                   mt_dist_work **work);
/* a completed sparse allreduce's counters (0 for other work): [0] the bytes this rank received,
 * [1] the pairs it summed or received (-1 when the sum reached it dense) */
void mt_dist_work_counters(const mt_dist_work *w, int64_t *out2);
mt_status mt_dist_work_wait(mt_dist_work *w); /* the work's own status and message */
int mt_dist_work_test(mt_dist_work *w);       /* 1 when complete (then wait returns at once) */
void mt_dist_work_free(mt_dist_work *w);      /* waits first if still running */
/* auto: the algorithm chosen for a message of this many bytes, from the cost table that
 * mt_dist_tune measured or mt_dist_load_model read (MT_ALG_MPI before either). */
int mt_dist_auto_choice(const mt_dist *d, int64_t bytes);
/* Time every algorithm at sizes 4 KB .. max_bytes on every rank (collective); the table is
 * rank 0's so every rank chooses alike. */
mt_status mt_dist_tune(mt_dist *d, int64_t max_bytes, int reps);
mt_status mt_dist_save_model(const mt_dist *d, const char *path); /* rank 0 writes, atomically */
mt_status mt_dist_load_model(mt_dist *d, const char *path);       /* collective; rank 0 reads */
/* the seconds the table predicts for alg at bytes (negative when the table has no row) */
double mt_dist_model_time(const mt_dist *d, int alg, int64_t bytes);

/* Top-k selection for residual gradient compression (RedSync; Deep Gradient Compression), on
 * the CPU (OpenMP) or on v's CUDA device. exact: the k largest |v| (ties: lower index);
 * threshold: every |v| >= a threshold t found so that k <= count <= floor(k*(1+slack)) (ties at
 * the k-th magnitude that make that impossible fall back to exact's k); trimmed: candidates
 * above mean + r*(max-mean), then exact on them; sampled: threshold's contract, from one
 * threshold a sample of v gives and one gathering pass (DGC; on CUDA the threshold method's
 * body). NaN counts as the largest magnitude: it is always selected, never left behind. */
enum { MT_TOPK_EXACT = 0, MT_TOPK_THRESHOLD = 1, MT_TOPK_TRIMMED = 2, MT_TOPK_SAMPLED = 3 };
/* select from v (contiguous float32 tensor, any shape, n elements) the elements of largest
 * magnitude: k = max(1, ceil(density * n)) (0 when n == 0); writes up to `cap` pairs into idx
 * (int32, 0-based flat indices, ascending) and val (float32), both on v's device, *count =
 * number written. slack: threshold method's tolerance above k (e.g. 0.2). MT_ERR_ARG, DTYPE,
 * DEVICE or SHAPE with clear messages for bad inputs (non-float32, tensors on other devices,
 * non-contiguous, density not in (0,1], cap < what the method may return: k for exact and
 * trimmed, floor(k*(1+slack)) for threshold and sampled). */
mt_status mt_dist_topk(const mt_tensor *v, double density, int method, double slack, mt_tensor *idx, mt_tensor *val,
                       int64_t *count);
/* The rest of a residual-gradient-compression step (lua/moontorch/dist/rgc.lua), CPU (OpenMP)
 * and CUDA (kernels on the tensors' device; the gradient never visits the host).
 * mt_dist_rgc_mask: after mt_dist_topk chose `count` 0-based indices idx[0..count) (int32) of
 * v: v[idx] = 0 (what was sent leaves the residual) and, when u is not NULL, u[idx] = 0
 * (momentum-factor masking); then idx[0..count) += base (v's offset in the flat gradient).
 * v and u: contiguous float32 of the same numel and device; idx int32 on that device. */
mt_status mt_dist_rgc_mask(mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base);
/* mt_dist_rgc_accumulate: the step's gradient g into the residual v in one pass (DGC's momentum
 * correction): d = g + weight_decay * p (p may be NULL when weight_decay is 0); with u (NULL
 * when momentum is 0) u = momentum * u + d and v += u, or v += d + momentum * u with Nesterov;
 * without, v += d. All contiguous float32 of v's numel on v's device; g and p are read only. */
mt_status mt_dist_rgc_accumulate(mt_tensor *v, mt_tensor *u, const mt_tensor *g, const mt_tensor *p, double momentum,
                                 int nesterov, double weight_decay);
/* dst[idx[i]] += scale * val[i] for every i with idx[i] >= 0 (negative: padding, skipped). idx
 * (int32) and val (float32, float16 or bfloat16) have the same numel, nblocks * block pairs:
 * one block per rank, indices unique within a block but not across blocks. dst: contiguous
 * float32 on the same device. An index >= numel(dst) is MT_ERR_INDEX naming it and its block. */
mt_status mt_dist_rgc_scatter_add(mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val, int64_t block,
                                  double scale);
/* 1-bit compression with error feedback (Seide et al. 2014; lua/moontorch/dist/onebit.lua), CPU
 * and CUDA. mt_dist_onebit_encode: v (contiguous float32, n elements) is the residual; g (NULL,
 * or like v) the gradient, added to v first (v then holds gradient + residual). Per chunk of `chunk` elements (a
 * positive multiple of 8; the last chunk may be shorter): scale = mean |v| into scales[c] (float32, >= ceil(n/chunk)),
 * bit = (v >= 0) into bits (uint8,
 * >= ceil(n/8); element i is bit i % 8 of byte i / 8), and v becomes the residual
 * v - (bit ? scale : -scale). A NaN gives bit 0 and stays in the scale and the residual.
 * mt_dist_onebit_decode: dst (contiguous float32, n) = alpha * the sum over nblocks blocks, in
 * block order, of (bit ? scale : -scale); block b's bits start at byte b * ceil(n/8) of bits and
 * its scales at b * ceil(n/chunk) of scales (what an allgather of every rank's encoding holds). */
mt_status mt_dist_onebit_encode(mt_tensor *v, const mt_tensor *g, mt_tensor *bits, mt_tensor *scales, int64_t chunk);
mt_status mt_dist_onebit_decode(mt_tensor *dst, const mt_tensor *bits, const mt_tensor *scales, int64_t chunk,
                                int64_t nblocks, double alpha);
/* The stale-synchronous parameter server (csrc/dist/ps*.c; lua/moontorch/dist/ParameterServer.lua):
 * a table of `numel` float32 parameters sharded over ranks 0 .. servers-1, each of which runs a
 * server thread beside its worker (as Bösen and PMLS-Caffe put a server on every machine).
 * Every rank is a worker. A clock is one iteration of one worker: it pushes the gradients of
 * its clock (mt_ps_push, any ranges, any number of times), ends the clock (mt_ps_clock, with
 * the rate for it) and pulls (mt_ps_pull), which waits until every worker has ended clock
 * c - staleness (c: the puller's clock). A server applies a clock's mean gradient, in one
 * fused SGD step with momentum and weight decay (Torch7's optim.sgd), once every worker has
 * ended that clock; so staleness 0 is synchronous SGD. A worker may read the parameters of an
 * earlier pull while a newer one is in flight, as long as they are recent enough (Bösen's
 * client cache; lua/moontorch/dist/ParameterServer.lua). With one rank the server is called
 * in-process. All calls on one table come from one thread; work runs in issue order on the
 * communication thread (with work != NULL the call returns a handle at once). */
typedef struct mt_ps mt_ps;
typedef struct mt_ps_stats {
  int64_t pulls, pushes, clocks;
  int64_t bytes_pushed, bytes_pulled;
  double held_seconds; /* per pull the longest a server held it back for the bound, summed */
  double pull_seconds; /* per pull the time from issue to the last reply, summed */
} mt_ps_stats;
/* collective over every rank: servers in 1 .. size, staleness >= 0 (at most 1000); lookahead:
 * a pull from a worker ahead of the servers' version gets the shard moved on by the momentum
 * part of the steps it has not seen (every rank passes the same) */
mt_status mt_ps_open(mt_dist *d, int64_t numel, int servers, int staleness, double momentum, double dampening,
                     double weight_decay, int nesterov, int lookahead, mt_ps **out);
/* collective: rank 0's params (and momentum, NULL: the buffer starts at the next gradient)
 * become the servers' state at version `clock`, which is every worker's clock from now on */
mt_status mt_ps_init(mt_ps *ps, mt_tensor *params, mt_tensor *momentum, int64_t clock, mt_dist_work **work);
/* the gradient of this worker's current clock for elements [offset, offset + numel(grad)) */
mt_status mt_ps_push(mt_ps *ps, mt_tensor *grad, int64_t offset, mt_dist_work **work);
/* ends this worker's clock; lr is the rate the servers step that clock with (worker 0's) */
mt_status mt_ps_clock(mt_ps *ps, double lr, mt_dist_work **work);
/* elements [offset, offset + count) of params (the whole flat vector), once every worker has
 * ended clock c - staleness (staleness < 0: the table's; 0: the newest state for this clock) */
mt_status mt_ps_pull(mt_ps *ps, mt_tensor *params, int64_t offset, int64_t count, int staleness, mt_dist_work **work);
/* the servers' whole state once every worker has ended this worker's clock: params and
 * momentum (NULL when the table has none; zeros with *started = 0 before the first step);
 * *version: the clocks applied. Blocking; any rank, no peer needs to call it. */
mt_status mt_ps_gather(mt_ps *ps, mt_tensor *params, mt_tensor *momentum, int *started, int64_t *version);
int64_t mt_ps_current_clock(const mt_ps *ps);
void mt_ps_get_stats(const mt_ps *ps, mt_ps_stats *out);
/* the version each server answered the last completed pull with (servers values) */
void mt_ps_last_versions(const mt_ps *ps, int64_t *out);
/* collective: every worker stops; each server thread ends once all have */
mt_status mt_ps_close(mt_ps *ps);
void mt_ps_free(mt_ps *ps); /* unclosed (an error ends the program): stops this rank's server, no wait */
/* MT_FFI_END */

#ifdef __cplusplus
}
#endif
#endif /* MOONTORCH_H */
