/* pointwise.c: CPU fill, copy (with dtype conversion), masked_fill, masked_select, arange. The
 * loops are in generic/pointwise.c (per dtype) and generic/pointwise_raw.c (per element width,
 * for the moves of raw bits). */
#include <stdlib.h>
#include "pointwise.h"
#include "../core/half_bulk.h"

#define MT_GENERIC_FILE "generic/pointwise.c"
#include "generate_all.h"

/* transposing copies move TILE x TILE tiles */
#define TILE 32
/* the raw copies, once per element width */
#define MT_GENERIC_FILE "generic/pointwise_raw.c"
#include "generate_raw.h"

/* ---- fill ---- */

#define FILL_ENT(E, N, T, CT) [E] = fill_##N,
static const mt_iter_chunk fill_table[MT_NUM_DTYPES] = {MT_DTYPE_LIST(FILL_ENT)};

mt_status mt__cpu_fill(mt_tensor *t, double v) {
  if (mt__numel(t) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[1] = {t};
  MT_TRY(mt_iter_init(&it, 1, ops, 0));
  mt__iter_chunks(&it, fill_table[t->dtype], &v);
  return MT_OK;
}

/* ---- copy: one tight loop per (source, destination) dtype pair ---- */

/* per pair: copy_<src>_to_<dst>_element reads a source element converted to the destination's
 * compute type (through the source's compute type, as the loops always did: the compiler
 * vectorises some pairs differently without that step); the kernel copy_<src>_to_<dst> is the
 * destination's convert_runs with it inlined */
#define COPY_KERNEL(SE, SN, ST, SCT, DE, DN, DT, DCT)                                         \
  static inline DCT copy_##SN##_to_##DN##_element(const char *src) {                          \
    SCT x = mt_ld_##SN((const ST *)src);                                                      \
    return PW_CV_##DN(x);                                                                     \
  }                                                                                           \
  static void copy_##SN##_to_##DN(const mt_iter *it, int64_t begin, int64_t end, void *arg) { \
    convert_runs_##DN(it, begin, end, sizeof(ST), copy_##SN##_to_##DN##_element);             \
  }
MT_DTYPE_PAIRS(COPY_KERNEL)

#define COPY_ENT(SE, SN, ST, SCT, DE, DN, DT, DCT) [DE][SE] = copy_##SN##_to_##DN,
static const mt_iter_chunk copy_table[MT_NUM_DTYPES][MT_NUM_DTYPES] = {MT_DTYPE_PAIRS(COPY_ENT)};

/* float16 <-> float32, the copies around every half GEMM and convolution: contiguous runs go
 * through F16C (half_bulk.c, same bits as the loops above) */
static void copy_f16_to_f32_bulk(const mt_iter *it, int64_t begin, int64_t end, void *arg) {
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == 4 && s[1] == 2) {
      mt__half_to_float_n((float *)run.p[0], (const uint16_t *)run.p[1], (size_t)run.n);
    } else {
      for (int64_t i = 0; i < run.n; i++)
        *(float *)(run.p[0] + i * s[0]) = mt_ld_f16((const uint16_t *)(run.p[1] + i * s[1]));
    }
  }
}
static void copy_f32_to_f16_bulk(const mt_iter *it, int64_t begin, int64_t end, void *arg) {
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == 2 && s[1] == 4) {
      mt__float_to_half_n((uint16_t *)run.p[0], (const float *)run.p[1], (size_t)run.n);
    } else {
      for (int64_t i = 0; i < run.n; i++)
        mt_st_f16((uint16_t *)(run.p[0] + i * s[0]), *(const float *)(run.p[1] + i * s[1]));
    }
  }
}

static void copy_tiled(size_t es, const mt_iter *it) {
  switch (es) {
    case 1: copy_tiled8(it); break;
    case 2: copy_tiled16(it); break;
    case 4: copy_tiled32(it); break;
    default: copy_tiled64(it); break;
  }
}

static mt_iter_chunk raw_copy_for(size_t es) {
  switch (es) {
    case 1: return copy_raw8;
    case 2: return copy_raw16;
    case 4: return copy_raw32;
    default: return copy_raw64;
  }
}

mt_status mt__cpu_copy(mt_tensor *dst, const mt_tensor *src) {
  if (mt__numel(dst) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[2] = {dst, src};
  MT_TRY(mt_iter_init(&it, 2, ops, 0));
  /* u8 and bool share a storage type, but only equal dtypes move raw bits: a bool source read
   * through mt_ld_b8 normalises any nonzero byte to 1 */
  int64_t es = (int64_t)mt__dtype_size(dst->dtype);
  if (dst->dtype == src->dtype && it.ndim >= 2 && it.sizes[0] >= TILE && it.sizes[1] >= TILE &&
      it.strides[0][0] == es && it.strides[1][1] == es && it.strides[0][1] != es)
    copy_tiled((size_t)es, &it);
  else if (dst->dtype == src->dtype) mt__iter_chunks(&it, raw_copy_for((size_t)es), NULL);
  else if (dst->dtype == MT_F32 && src->dtype == MT_F16) mt__iter_chunks(&it, copy_f16_to_f32_bulk, NULL);
  else if (dst->dtype == MT_F16 && src->dtype == MT_F32) mt__iter_chunks(&it, copy_f32_to_f16_bulk, NULL);
  else mt__iter_chunks(&it, copy_table[dst->dtype][src->dtype], NULL);
  return MT_OK;
}

/* ---- masked_fill: t[mask] = v (mask u8 or bool, already expanded to t) ---- */

#define MASKED_FILL_ENT(E, N, T, CT) [E] = masked_fill_##N,
static const mt_iter_chunk masked_fill_table[MT_NUM_DTYPES] = {MT_DTYPE_LIST(MASKED_FILL_ENT)};

mt_status mt__cpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double v) {
  if (mt__numel(t) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[2] = {t, mask};
  MT_TRY(mt_iter_init(&it, 2, ops, 0));
  mt__iter_chunks(&it, masked_fill_table[t->dtype], &v);
  return MT_OK;
}

/* ---- masked_select: the elements of src where mask is set, in row-major order ---- */

/* Count per chunk, prefix-sum, then each chunk writes its own slice of out. */
mt_status mt__cpu_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask) {
  mt_iter it;
  const mt_tensor *ops[2] = {src, mask};
  int64_t numel = mt__numel(src);
  MT_TRY(mt_iter_init(&it, 2, ops, MT_ITER_ROW_MAJOR));
  int nch = mt_iter_nchunks(numel);
  int64_t *counts = calloc((size_t)nch + 1, sizeof *counts);
  if (!counts) return mt__error(MT_ERR_MEMORY, "maskedSelect: out of host memory");
  if (numel > 0) {
    const int64_t *s = it.strides[0];
#pragma omp parallel for if (nch > 1)
    for (int c = 0; c < nch; c++) {
      int64_t k = 0;
      mt_iter_run run;
      for (mt_iter_first(&it, &run, numel * c / nch, numel * (c + 1) / nch); run.n > 0; mt_iter_next(&it, &run))
        for (int64_t i = 0; i < run.n; i++) k += *(const uint8_t *)(run.p[1] + i * s[1]) != 0;
      counts[c + 1] = k;
    }
  }
  for (int c = 0; c < nch; c++) counts[c + 1] += counts[c]; /* counts[c]: where chunk c starts */
  int64_t total = counts[nch];
  mt_status st = mt_tensor_resize(out, 1, &total);
  if (st == MT_OK && total > 0) {
    switch (mt__dtype_size(src->dtype)) {
      case 1: masked_select_write8(&it, counts, nch, (uint8_t *)mt__data(out)); break;
      case 2: masked_select_write16(&it, counts, nch, (uint16_t *)mt__data(out)); break;
      case 4: masked_select_write32(&it, counts, nch, (uint32_t *)mt__data(out)); break;
      default: masked_select_write64(&it, counts, nch, (uint64_t *)mt__data(out)); break;
    }
  }
  free(counts);
  return st;
}

/* ---- arange: t[i] = start + i*step (t contiguous) ---- */

#define ARANGE_CASE(E, N, T, CT) \
  case E: arange_##N((T *)mt__data(t), numel, start, step); break;

mt_status mt__cpu_arange(mt_tensor *t, double start, double step) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    MT_DTYPE_LIST(ARANGE_CASE)
    default: return mt__error(MT_ERR_DTYPE, "arange: invalid dtype %d", (int)t->dtype);
  }
  return MT_OK;
}
