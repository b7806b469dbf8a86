/* pointwise.c: CPU fill, copy (with dtype conversion), masked_fill, masked_select, arange. */
#include <stdlib.h>
#include "pointwise.h"
#include "../core/half_bulk.h"

/* ---- fill ---- */

typedef void (*fill_fn)(const mt_iter *it, double v);

#define FILL_FN(E, N, T, CT)                                           \
  static void fill_##N(const mt_iter *it, double v) {                  \
    T val;                                                             \
    mt_st_##N(&val, PW_CV_##N(v));                                     \
    MT_ITER_RUNS(it, n, p, s, {                                        \
      if (s[0] == sizeof(T)) {                                         \
        T *o = (T *)p[0];                                              \
        for (int64_t i = 0; i < n; i++) o[i] = val;                    \
      } else {                                                         \
        for (int64_t i = 0; i < n; i++) *(T *)(p[0] + i * s[0]) = val; \
      }                                                                \
    });                                                                \
  }
MT_DTYPE_LIST(FILL_FN)
#define FILL_ENT(E, N, T, CT) [E] = fill_##N,
static const fill_fn fill_table[MT_NUM_DTYPES] = {MT_DTYPE_LIST(FILL_ENT)};

mt_status mt__cpu_fill(mt_tensor *t, double v) {
  if (mt__numel(t) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[1] = {t};
  MT_TRY(mt_iter_init(&it, 1, ops, 0));
  fill_table[t->dtype](&it, v);
  return MT_OK;
}

/* ---- copy: one tight loop per (source, destination) dtype pair ---- */

typedef void (*copy_fn)(const mt_iter *it);

#define COPY_FN(SE, SN, ST, SCT, DE, DN, DT, DCT)             \
  static void copy_##SN##_to_##DN(const mt_iter *it) {        \
    MT_ITER_RUNS(it, n, p, s, {                               \
      if (s[0] == sizeof(DT) && s[1] == sizeof(ST)) {         \
        DT *o = (DT *)p[0];                                   \
        const ST *a = (const ST *)p[1];                       \
        for (int64_t i = 0; i < n; i++) {                     \
          SCT x = mt_ld_##SN(a + i);                          \
          mt_st_##DN(o + i, PW_CV_##DN(x));                   \
        }                                                     \
      } else {                                                \
        for (int64_t i = 0; i < n; i++) {                     \
          SCT x = mt_ld_##SN((const ST *)(p[1] + i * s[1]));  \
          mt_st_##DN((DT *)(p[0] + i * s[0]), PW_CV_##DN(x)); \
        }                                                     \
      }                                                       \
    });                                                       \
  }
MT_DTYPE_PAIRS(COPY_FN)

#define COPY_ENT(SE, SN, ST, SCT, DE, DN, DT, DCT) [DE][SE] = copy_##SN##_to_##DN,
static const copy_fn copy_table[MT_NUM_DTYPES][MT_NUM_DTYPES] = {MT_DTYPE_PAIRS(COPY_ENT)};

/* float16 <-> float32, the copies around every half GEMM and convolution: contiguous runs go
 * through F16C (half_bulk.c, same bits as the loops above) */
static void copy_f16_to_f32_bulk(const mt_iter *it) {
  MT_ITER_RUNS(it, n, p, s, {
    if (s[0] == 4 && s[1] == 2) {
      mt__half_to_float_n((float *)p[0], (const uint16_t *)p[1], (size_t)n);
    } else {
      for (int64_t i = 0; i < n; i++) *(float *)(p[0] + i * s[0]) = mt_ld_f16((const uint16_t *)(p[1] + i * s[1]));
    }
  });
}
static void copy_f32_to_f16_bulk(const mt_iter *it) {
  MT_ITER_RUNS(it, n, p, s, {
    if (s[0] == 2 && s[1] == 4) {
      mt__float_to_half_n((uint16_t *)p[0], (const float *)p[1], (size_t)n);
    } else {
      for (int64_t i = 0; i < n; i++) mt_st_f16((uint16_t *)(p[0] + i * s[0]), *(const float *)(p[1] + i * s[1]));
    }
  });
}

/* Same dtype: move the bits (keeps NaN payloads, no conversion), memcpy for contiguous runs. */
#define RAW_COPY_FN(BITS)                                                                    \
  static void copy_raw##BITS(const mt_iter *it) {                                            \
    MT_ITER_RUNS(it, n, p, s, {                                                              \
      if (s[0] == BITS / 8 && s[1] == BITS / 8) {                                            \
        memmove(p[0], p[1], (size_t)n *(BITS / 8));                                          \
      } else {                                                                               \
        for (int64_t i = 0; i < n; i++)                                                      \
          *(uint##BITS##_t *)(p[0] + i * s[0]) = *(const uint##BITS##_t *)(p[1] + i * s[1]); \
      }                                                                                      \
    });                                                                                      \
  }
RAW_COPY_FN(8)
RAW_COPY_FN(16)
RAW_COPY_FN(32)
RAW_COPY_FN(64)

/* Transposing copies (dst walks dim 0 of the iterator contiguously, src walks dim 1): a plain
 * loop reads src a cache line per element; 32x32 tiles touch each line once. Outer dims and
 * tile rows are shared among threads. */
#define TILE 32
#define TILED_COPY_FN(BITS)                                                                                        \
  static void copy_tiled##BITS(const mt_iter *it) {                                                                \
    typedef uint##BITS##_t E;                                                                                      \
    const int64_t n0 = it->sizes[0], n1 = it->sizes[1], nb1 = (n1 + TILE - 1) / TILE;                              \
    const int64_t d0 = it->strides[0][0], d1 = it->strides[1][0];                                                  \
    const int64_t s0 = it->strides[0][1], s1 = it->strides[1][1];                                                  \
    const int64_t work = it->numel / (n0 * n1) * nb1;                                                              \
    _Pragma("omp parallel for if(it->numel > MT_PARALLEL_GRAIN)") for (int64_t w = 0; w < work; w++) {             \
      int64_t idx[MT_MAX_DIMS];                                                                                    \
      char *p[MT_ITER_MAX_OPS];                                                                                    \
      mt_iter_seek(it, (w / nb1) * n0 * n1, idx, p);                                                               \
      int64_t j0 = (w % nb1) * TILE, j1 = j0 + TILE < n1 ? j0 + TILE : n1;                                         \
      for (int64_t i0 = 0; i0 < n0; i0 += TILE) {                                                                  \
        int64_t i1 = i0 + TILE < n0 ? i0 + TILE : n0;                                                              \
        for (int64_t j = j0; j < j1; j++)                                                                          \
          for (int64_t i = i0; i < i1; i++) *(E *)(p[0] + i * d0 + j * d1) = *(const E *)(p[1] + i * s0 + j * s1); \
      }                                                                                                            \
    }                                                                                                              \
  }
TILED_COPY_FN(8)
TILED_COPY_FN(16)
TILED_COPY_FN(32)
TILED_COPY_FN(64)

static copy_fn tiled_copy_for(size_t es) {
  switch (es) {
    case 1: return copy_tiled8;
    case 2: return copy_tiled16;
    case 4: return copy_tiled32;
    default: return copy_tiled64;
  }
}

static copy_fn raw_copy_for(size_t es) {
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
    tiled_copy_for((size_t)es)(&it);
  else if (dst->dtype == src->dtype) raw_copy_for((size_t)es)(&it);
  else if (dst->dtype == MT_F32 && src->dtype == MT_F16) copy_f16_to_f32_bulk(&it);
  else if (dst->dtype == MT_F16 && src->dtype == MT_F32) copy_f32_to_f16_bulk(&it);
  else copy_table[dst->dtype][src->dtype](&it);
  return MT_OK;
}

/* ---- masked_fill: t[mask] = v (mask u8 or bool, already expanded to t) ---- */

#define MFILL_FN(E, N, T, CT)                                                     \
  static void mfill_##N(const mt_iter *it, double v) {                            \
    T val;                                                                        \
    mt_st_##N(&val, PW_CV_##N(v));                                                \
    MT_ITER_RUNS(it, n, p, s, {                                                   \
      if (s[0] == sizeof(T) && s[1] == 1) {                                       \
        T *o = (T *)p[0];                                                         \
        const uint8_t *m = (const uint8_t *)p[1];                                 \
        for (int64_t i = 0; i < n; i++) o[i] = m[i] ? val : o[i];                 \
      } else {                                                                    \
        for (int64_t i = 0; i < n; i++)                                           \
          if (*(const uint8_t *)(p[1] + i * s[1])) *(T *)(p[0] + i * s[0]) = val; \
      }                                                                           \
    });                                                                           \
  }
MT_DTYPE_LIST(MFILL_FN)
#define MFILL_ENT(E, N, T, CT) [E] = mfill_##N,
static const fill_fn mfill_table[MT_NUM_DTYPES] = {MT_DTYPE_LIST(MFILL_ENT)};

mt_status mt__cpu_masked_fill(mt_tensor *t, const mt_tensor *mask, double v) {
  if (mt__numel(t) == 0) return MT_OK;
  mt_iter it;
  const mt_tensor *ops[2] = {t, mask};
  MT_TRY(mt_iter_init(&it, 2, ops, 0));
  mfill_table[t->dtype](&it, v);
  return MT_OK;
}

/* ---- masked_select: the elements of src where mask is set, in row-major order ---- */

/* Count per chunk, prefix-sum, then each chunk writes its own slice of out. */
#define MSEL_WRITE(UT)                                                                      \
  do {                                                                                      \
    UT *o = (UT *)mt__data(out);                                                            \
    _Pragma("omp parallel for if(nch > 1)") for (int c = 0; c < nch; c++) {                 \
      int64_t w = counts[c];                                                                \
      MT__ITER_CHUNK(&it, numel *c / nch, numel * (c + 1) / nch, n, p, s, {                 \
        for (int64_t i = 0; i < n; i++)                                                     \
          if (*(const uint8_t *)(p[1] + i * s[1])) o[w++] = *(const UT *)(p[0] + i * s[0]); \
      });                                                                                   \
    }                                                                                       \
  } while (0)

mt_status mt__cpu_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask) {
  mt_iter it;
  const mt_tensor *ops[2] = {src, mask};
  int64_t numel = mt__numel(src);
  MT_TRY(mt_iter_init(&it, 2, ops, MT_ITER_ROW_MAJOR));
  int nch = mt_iter_nchunks(numel);
  int64_t *counts = calloc((size_t)nch + 1, sizeof *counts);
  if (!counts) return mt__error(MT_ERR_MEMORY, "maskedSelect: out of host memory");
  if (numel > 0) {
#pragma omp parallel for if (nch > 1)
    for (int c = 0; c < nch; c++) {
      int64_t k = 0;
      MT__ITER_CHUNK(&it, numel * c / nch, numel * (c + 1) / nch, n, p, s, {
        for (int64_t i = 0; i < n; i++) k += *(const uint8_t *)(p[1] + i * s[1]) != 0;
      });
      counts[c + 1] = k;
    }
  }
  for (int c = 0; c < nch; c++) counts[c + 1] += counts[c]; /* counts[c]: where chunk c starts */
  int64_t total = counts[nch];
  mt_status st = mt_tensor_resize(out, 1, &total);
  if (st == MT_OK && total > 0) {
    switch (mt__dtype_size(src->dtype)) {
      case 1: MSEL_WRITE(uint8_t); break;
      case 2: MSEL_WRITE(uint16_t); break;
      case 4: MSEL_WRITE(uint32_t); break;
      default: MSEL_WRITE(uint64_t); break;
    }
  }
  free(counts);
  return st;
}

/* ---- arange: t[i] = start + i*step (t contiguous) ---- */

#define ARANGE_CASE(E, N, T, CT)                                                                    \
  case E: {                                                                                         \
    T *o = (T *)mt__data(t);                                                                        \
    _Pragma("omp parallel for if(numel > MT_PARALLEL_GRAIN)") for (int64_t i = 0; i < numel; i++) { \
      double x = start + (double)i * step;                                                          \
      mt_st_##N(o + i, PW_CV_##N(x));                                                               \
    }                                                                                               \
    break;                                                                                          \
  }

mt_status mt__cpu_arange(mt_tensor *t, double start, double step) {
  int64_t numel = mt__numel(t);
  if (numel == 0) return MT_OK;
  switch (t->dtype) {
    MT_DTYPE_LIST(ARANGE_CASE)
    default: return mt__error(MT_ERR_DTYPE, "arange: invalid dtype %d", (int)t->dtype);
  }
  return MT_OK;
}
