/* pending.c: weak placeholders for CPU backend functions not yet written; a real definition
 * anywhere in the library overrides these. Removed once every op has landed. */
#include "cpu.h"
#include "../core/error.h"

__attribute__((weak)) mt_status mt__cpu_fill(mt_tensor *t, double v) { return mt__error(MT_ERR_UNSUPPORTED, "fill: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_copy(mt_tensor *dst, const mt_tensor *src) { return mt__error(MT_ERR_UNSUPPORTED, "copy: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_unary(mt_unary_op op, mt_tensor *out, const mt_tensor *a, double p1, double p2) { return mt__error(MT_ERR_UNSUPPORTED, "unary: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_binary(mt_binary_op op, mt_tensor *out, const mt_tensor *a, const mt_tensor *b, double alpha) { return mt__error(MT_ERR_UNSUPPORTED, "binary: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_addc(int div, mt_tensor *out, const mt_tensor *a, double value, const mt_tensor *b, const mt_tensor *c) { return mt__error(MT_ERR_UNSUPPORTED, "addc: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double v) { return mt__error(MT_ERR_UNSUPPORTED, "masked_fill: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask) { return mt__error(MT_ERR_UNSUPPORTED, "masked_select: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_arange(mt_tensor *t, double start, double step) { return mt__error(MT_ERR_UNSUPPORTED, "arange: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi) { return mt__error(MT_ERR_UNSUPPORTED, "random_uniform: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std) { return mt__error(MT_ERR_UNSUPPORTED, "random_normal: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p) { return mt__error(MT_ERR_UNSUPPORTED, "random_bernoulli: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_reduce(mt_reduce_op op, mt_tensor *out, mt_tensor *indices, const mt_tensor *a, int dim, double p, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "reduce: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_sort(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int descending, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "sort: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_topk(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int64_t k, int dim, int largest, int sorted, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "topk: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_gemm(mt_tensor *out, double beta, double alpha, const mt_tensor *a, const mt_tensor *b) { return mt__error(MT_ERR_UNSUPPORTED, "gemm: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_gemv(mt_tensor *out, double beta, double alpha, const mt_tensor *m, const mt_tensor *v) { return mt__error(MT_ERR_UNSUPPORTED, "gemv: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_dot(const mt_tensor *a, const mt_tensor *b, double *out) { return mt__error(MT_ERR_UNSUPPORTED, "dot: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim) { return mt__error(MT_ERR_UNSUPPORTED, "cat: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "index_select: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double alpha, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "index_add: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "index_fill: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "gather: not implemented yet on the CPU"); }
__attribute__((weak)) mt_status mt__cpu_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v, int64_t base) { return mt__error(MT_ERR_UNSUPPORTED, "scatter: not implemented yet on the CPU"); }
