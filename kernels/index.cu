/* index.cu: cat, index_select, index_add, index_fill, gather, scatter and masked_select.
 *
 * Every op walks one N-d shape with the shared offsets calculator. The position along `dim`
 * comes from an extra "coordinate" operand whose strides are 1 at dim and 0 elsewhere (its
 * offset is the coordinate itself), and the operand that `dim` indexes gets stride 0 there (its
 * offset is the start of the line the index picks from).
 *
 * Index values are checked on the device before anything is written, as on the CPU: a kernel
 * finds the first out-of-range index (row-major) with an atomic minimum, the host reads it back
 * (one synchronisation per index op) and reports "gather: index 7 out of range for dimension 2
 * of size 5", leaving the destination untouched. The op kernels still skip any index out of
 * range, so memory outside a tensor is never touched whatever happens. Indices are int64 or
 * int32 and carry `base`; messages report them as given and dimensions 1-based.
 * Ops that only move elements (cat, index_select, gather, scatter from a tensor) copy raw words
 * of the element size, so they are instantiated per size rather than per dtype. */
#include "common.cuh"
#include <cub/device/device_scan.cuh>

/* strides 1 at dim, 0 elsewhere: the offset of this operand is the coordinate along dim */
static void mtk_coord_strides(int64_t *st, int dim) {
  for (int d = 0; d < MT_MAX_DIMS; d++) st[d] = d == dim ? 1 : 0;
}

/* a copy of t's strides with dim's set to 0 */
static void mtk_line_strides(int64_t *st, const mt_tensor *t, int dim) {
  memcpy(st, t->strides, sizeof t->strides);
  st[dim] = 0;
}

/* the element size picks the raw word type */
template <class F> static mt_status mtk_dispatch_words(size_t es, F &&f) {
  switch (es) {
    case 1: return f(mtk_tag<uint8_t>());
    case 2: return f(mtk_tag<uint16_t>());
    case 4: return f(mtk_tag<uint32_t>());
    default: return f(mtk_tag<uint64_t>());
  }
}

/* ---- index validation ---- */

template <class IT> struct mtk_index_bad_f {
  const IT *index;
  int64_t lo, hi;
  unsigned long long *first;
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    int64_t v = (int64_t)index[off[0]];
    if (v < lo || v >= hi) atomicMin(first, (unsigned long long)i);
  }
};

/* every value of index (any shape) must lie in [base, base + size) */
static mt_status mtk_check_indices(const char *op, const mt_tensor *index, int dim, int64_t size, int64_t base) {
  int64_t n = mt__numel(index);
  if (n == 0) return MT_OK;
  int device = index->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp first;
  MT_TRY(first.alloc(device, sizeof(unsigned long long)));
  MT_CUDA_TRY(cudaMemsetAsync(first.as<void>(), 0xff, sizeof(unsigned long long), s), op);
  const int64_t *st[1] = {index->strides};
  MT_TRY(mtk_dispatch_index(index->dtype, op, [&](auto itag) {
    typedef typename decltype(itag)::type IT;
    mtk_index_bad_f<IT> f{mtk_ptr<IT>(index), base, base + size, first.as<unsigned long long>()};
    return mtk_pointwise<1>(device, op, index->ndim, index->sizes, st, f);
  }));
  unsigned long long pos = 0;
  MT_CUDA_TRY(cudaMemcpyAsync(&pos, first.as<void>(), sizeof pos, cudaMemcpyDeviceToHost, s), op);
  MT_CUDA_TRY(cudaStreamSynchronize(s), op);
  if (pos == ~0ull) return MT_OK;
  /* the offender's value, from its row-major position */
  int64_t off = 0, rem = (int64_t)pos;
  for (int d = index->ndim - 1; d >= 0; d--) {
    off += (rem % index->sizes[d]) * index->strides[d];
    rem /= index->sizes[d];
  }
  size_t es = mt__dtype_size(index->dtype);
  int64_t bad = 0;
  int32_t bad32 = 0;
  void *dst = es == 8 ? (void *)&bad : (void *)&bad32;
  MT_CUDA_TRY(cudaMemcpy(dst, mt__data(index) + off * (int64_t)es, es, cudaMemcpyDeviceToHost), op);
  if (es != 8) bad = bad32;
  return mt__error(MT_ERR_INDEX, "%s: index %lld out of range for dimension %d of size %lld", op, (long long)bad,
                   dim + 1, (long long)size);
}

/* ---- cat ---- */

extern "C" mt_status mt__cuda_cat(mt_tensor *out, mt_tensor *const *inputs, int n, int dim) {
  if (mt__numel(out) == 0) return MT_OK;
  int64_t at = 0;
  for (int k = 0; k < n; k++) {
    const mt_tensor *in = inputs[k];
    /* the entry point passes only inputs that take part (legacy 1-d empties removed) */
    if (mt__numel(in) > 0) {
      mt_tensor *view;
      MT_TRY(mt_tensor_narrow(&view, out, dim, at, in->sizes[dim]));
      mt_status st = mtk_copy_same(view, in, "cat");
      mt_tensor_release(view);
      MT_TRY(st);
    }
    at += in->sizes[dim];
  }
  return MT_OK;
}

/* ---- index_select: out[.., j, ..] = src[.., index[j], ..] ---- */

template <class W, class IT> struct mtk_index_select_f {
  W *out;
  const W *src;
  const IT *index;
  int64_t istride, sstride, ssize, base;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    int64_t v = (int64_t)index[off[2] * istride], k = v - base;
    if (k < 0 || k >= ssize) return;
    out[off[0]] = src[off[1] + k * sstride];
  }
};

static int64_t mtk_index_len(const mt_tensor *index) { return mt__numel(index); }
static int64_t mtk_index_stride(const mt_tensor *index) { return index->ndim ? index->strides[index->ndim - 1] : 0; }

extern "C" mt_status mt__cuda_index_select(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index,
                                           int64_t base) {
  const char *op = "index_select";
  MT_TRY(mtk_check_indices(op, index, dim, src->sizes[dim], base));
  if (mt__numel(out) == 0) return MT_OK;
  int64_t sst[MT_MAX_DIMS], cst[MT_MAX_DIMS];
  mtk_line_strides(sst, src, dim);
  mtk_coord_strides(cst, dim);
  const int64_t *st[3] = {out->strides, sst, cst};
  MT_TRY(mtk_dispatch_index(index->dtype, op, [&](auto itag) {
    typedef typename decltype(itag)::type IT;
    return mtk_dispatch_words(mt__dtype_size(src->dtype), [&](auto wtag) {
      typedef typename decltype(wtag)::type W;
      mtk_index_select_f<W, IT> f{mtk_ptr<W>(out),
                                  mtk_ptr<W>(src),
                                  mtk_ptr<IT>(index),
                                  mtk_index_stride(index),
                                  src->strides[dim],
                                  src->sizes[dim],
                                  base};
      return mtk_pointwise<3>(out->device, op, out->ndim, out->sizes, st, f);
    });
  }));
  return MT_OK;
}

/* ---- index_add: t[.., index[j], ..] += alpha * src[.., j, ..] (duplicates accumulate) ---- */

MTK_D void mtk_atomic_add(float *p, float v) { atomicAdd(p, v); }
MTK_D void mtk_atomic_add(double *p, double v) { atomicAdd(p, v); }
MTK_D void mtk_atomic_add(__half *p, float v) { atomicAdd(p, __float2half_rn(v)); }
MTK_D void mtk_atomic_add(__nv_bfloat16 *p, float v) { atomicAdd(p, __float2bfloat16_rn(v)); }
MTK_D void mtk_atomic_add(int32_t *p, int64_t v) { atomicAdd((int *)p, (int)(uint32_t)(uint64_t)v); }
MTK_D void mtk_atomic_add(int64_t *p, int64_t v) { atomicAdd((unsigned long long *)p, (unsigned long long)v); }
/* bytes: compare-and-swap on the aligned 32-bit word that holds them */
template <class B> MTK_D void mtk_atomic_add_byte(B *p, int64_t v) {
  uintptr_t addr = (uintptr_t)p;
  unsigned int *word = (unsigned int *)(addr & ~(uintptr_t)3);
  unsigned int shift = (unsigned int)(addr & 3) * 8, old = *word, assumed;
  do {
    assumed = old;
    B cur, next;
    memcpy(&cur, (const char *)&assumed + (shift / 8), 1);
    mtk_st(&next, mtk_ld(&cur) + v);
    uint8_t nb;
    memcpy(&nb, &next, 1);
    unsigned int repl = (assumed & ~(0xffu << shift)) | ((unsigned int)nb << shift);
    old = atomicCAS(word, assumed, repl);
  } while (old != assumed);
}
MTK_D void mtk_atomic_add(uint8_t *p, int64_t v) { mtk_atomic_add_byte(p, v); }
MTK_D void mtk_atomic_add(mtk_bool *p, int64_t v) { mtk_atomic_add_byte(p, v); }
MTK_D void mtk_atomic_add(int8_t *p, int64_t v) { mtk_atomic_add_byte(p, v); }
/* int16: compare-and-swap on the aligned 32-bit word that holds the two bytes */
MTK_D void mtk_atomic_add(int16_t *p, int64_t v) {
  uintptr_t addr = (uintptr_t)p;
  unsigned int *word = (unsigned int *)(addr & ~(uintptr_t)3);
  unsigned int shift = (unsigned int)(addr & 2) * 8, old = *word, assumed;
  do {
    assumed = old;
    uint16_t cur = (uint16_t)(assumed >> shift);
    uint16_t next = (uint16_t)(int16_t)((int64_t)(int16_t)cur + v);
    unsigned int repl = (assumed & ~(0xffffu << shift)) | ((unsigned int)next << shift);
    old = atomicCAS(word, assumed, repl);
  } while (old != assumed);
}

template <class T, class IT> struct mtk_index_add_f {
  typedef typename mtk_ct<T>::type CT;
  T *t;
  const T *src;
  const IT *index;
  int64_t istride, tstride, tsize, base;
  CT alpha;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    int64_t v = (int64_t)index[off[2] * istride], k = v - base;
    if (k < 0 || k >= tsize) return;
    CT x = mtk_ld(src + off[0]);
    if constexpr (mtk_is_float<T>::value) mtk_atomic_add(t + off[1] + k * tstride, alpha * x);
    else mtk_atomic_add(t + off[1] + k * tstride, (int64_t)((uint64_t)alpha * (uint64_t)x)); /* wraps */
  }
};

extern "C" mt_status mt__cuda_index_add(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src,
                                        double alpha, int64_t base) {
  const char *op = "index_add";
  if (src->dtype != t->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: source has dtype %s, tensor %s", op, mt_dtype_name(src->dtype),
                     mt_dtype_name(t->dtype));
  MT_TRY(mtk_check_indices(op, index, dim, t->sizes[dim], base));
  if (mt__numel(src) == 0) return MT_OK;
  int64_t tst[MT_MAX_DIMS], cst[MT_MAX_DIMS];
  mtk_line_strides(tst, t, dim);
  mtk_coord_strides(cst, dim);
  const int64_t *st[3] = {src->strides, tst, cst};
  MT_TRY(mtk_dispatch_index(index->dtype, op, [&](auto itag) {
    typedef typename decltype(itag)::type IT;
    return mtk_dispatch(t->dtype, op, [&](auto tag) {
      typedef typename decltype(tag)::type T;
      typedef typename mtk_ct<T>::type CT;
      mtk_index_add_f<T, IT> f{mtk_ptr<T>(t),
                               mtk_ptr<T>(src),
                               mtk_ptr<IT>(index),
                               mtk_index_stride(index),
                               t->strides[dim],
                               t->sizes[dim],
                               base,
                               mtk_from_double<CT>(alpha)};
      return mtk_pointwise<3>(t->device, op, src->ndim, src->sizes, st, f);
    });
  }));
  return MT_OK;
}

/* ---- index_fill: t[.., index[j], ..] = v ---- */

template <class T, class IT> struct mtk_index_fill_f {
  T *t;
  const IT *index;
  int64_t istride, tstride, tsize, base;
  typename mtk_ct<T>::type v;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    int64_t x = (int64_t)index[off[1] * istride], k = x - base;
    if (k < 0 || k >= tsize) return;
    mtk_st(t + off[0] + k * tstride, v);
  }
};

extern "C" mt_status mt__cuda_index_fill(mt_tensor *t, int dim, const mt_tensor *index, double v, int64_t base) {
  const char *op = "index_fill";
  int64_t n = mtk_index_len(index);
  MT_TRY(mtk_check_indices(op, index, dim, t->sizes[dim], base));
  if (n == 0 || mt__numel(t) == 0) return MT_OK;
  /* walk t's shape with dim replaced by the index list */
  int64_t sizes[MT_MAX_DIMS], tst[MT_MAX_DIMS], cst[MT_MAX_DIMS];
  memcpy(sizes, t->sizes, sizeof sizes);
  sizes[dim] = n;
  mtk_line_strides(tst, t, dim);
  mtk_coord_strides(cst, dim);
  const int64_t *st[2] = {tst, cst};
  MT_TRY(mtk_dispatch_index(index->dtype, op, [&](auto itag) {
    typedef typename decltype(itag)::type IT;
    return mtk_dispatch(t->dtype, op, [&](auto tag) {
      typedef typename decltype(tag)::type T;
      typedef typename mtk_ct<T>::type CT;
      mtk_index_fill_f<T, IT> f{mtk_ptr<T>(t),         mtk_ptr<IT>(index), mtk_index_stride(index),
                                t->strides[dim],       t->sizes[dim],      base,
                                mtk_from_double<CT>(v)};
      return mtk_pointwise<2>(t->device, op, t->ndim, sizes, st, f);
    });
  }));
  return MT_OK;
}

/* ---- gather: out[i][j][k] = src[i][index[i][j][k]][k] (dim 1), walking index's shape ---- */

template <class W, class IT> struct mtk_gather_f {
  W *out;
  const IT *index;
  const W *src;
  int64_t sstride, ssize, base;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    int64_t v = (int64_t)index[off[1]], k = v - base;
    if (k < 0 || k >= ssize) return;
    out[off[0]] = src[off[2] + k * sstride];
  }
};

extern "C" mt_status mt__cuda_gather(mt_tensor *out, const mt_tensor *src, int dim, const mt_tensor *index,
                                     int64_t base) {
  const char *op = "gather";
  if (mt__numel(index) == 0) return MT_OK;
  int64_t sst[MT_MAX_DIMS];
  mtk_line_strides(sst, src, dim);
  const int64_t *st[3] = {out->strides, index->strides, sst};
  MT_TRY(mtk_check_indices(op, index, dim, src->sizes[dim], base));
  MT_TRY(mtk_dispatch_index(index->dtype, op, [&](auto itag) {
    typedef typename decltype(itag)::type IT;
    return mtk_dispatch_words(mt__dtype_size(src->dtype), [&](auto wtag) {
      typedef typename decltype(wtag)::type W;
      mtk_gather_f<W, IT> f{mtk_ptr<W>(out),   mtk_ptr<IT>(index), mtk_ptr<W>(src),
                            src->strides[dim], src->sizes[dim],    base};
      return mtk_pointwise<3>(out->device, op, index->ndim, index->sizes, st, f);
    });
  }));
  return MT_OK;
}

/* ---- scatter: t[i][index[i][j][k]][k] = src[i][j][k] (or v), walking index's shape ----
 * Duplicate indices leave one of the written values (unspecified which, as in Torch7/PyTorch). */

template <class W, class IT> struct mtk_scatter_f {
  W *t;
  const IT *index;
  const W *src;
  int64_t tstride, tsize, base;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    int64_t v = (int64_t)index[off[0]], k = v - base;
    if (k < 0 || k >= tsize) return;
    t[off[2] + k * tstride] = src[off[1]];
  }
};

template <class T, class IT> struct mtk_scatter_fill_f {
  T *t;
  const IT *index;
  int64_t tstride, tsize, base;
  typename mtk_ct<T>::type v;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    int64_t x = (int64_t)index[off[0]], k = x - base;
    if (k < 0 || k >= tsize) return;
    mtk_st(t + off[2] + k * tstride, v);
  }
};

extern "C" mt_status mt__cuda_scatter(mt_tensor *t, int dim, const mt_tensor *index, const mt_tensor *src, double v,
                                      int64_t base) {
  const char *op = src ? "scatter" : "scatter_fill";
  if (mt__numel(index) == 0) return MT_OK;
  if (src && src->dtype != t->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: source has dtype %s, tensor %s", op, mt_dtype_name(src->dtype),
                     mt_dtype_name(t->dtype));
  int64_t tst[MT_MAX_DIMS];
  static const int64_t zeros[MT_MAX_DIMS] = {0};
  mtk_line_strides(tst, t, dim);
  const int64_t *st[3] = {index->strides, src ? src->strides : zeros, tst};
  MT_TRY(mtk_check_indices(op, index, dim, t->sizes[dim], base));
  MT_TRY(mtk_dispatch_index(index->dtype, op, [&](auto itag) {
    typedef typename decltype(itag)::type IT;
    if (src) {
      return mtk_dispatch_words(mt__dtype_size(t->dtype), [&](auto wtag) {
        typedef typename decltype(wtag)::type W;
        mtk_scatter_f<W, IT> f{mtk_ptr<W>(t),   mtk_ptr<IT>(index), mtk_ptr<W>(src),
                               t->strides[dim], t->sizes[dim],      base};
        return mtk_pointwise<3>(t->device, op, index->ndim, index->sizes, st, f);
      });
    }
    return mtk_dispatch(t->dtype, op, [&](auto tag) {
      typedef typename decltype(tag)::type T;
      typedef typename mtk_ct<T>::type CT;
      mtk_scatter_fill_f<T, IT> f{mtk_ptr<T>(t), mtk_ptr<IT>(index),    t->strides[dim], t->sizes[dim],
                                  base,          mtk_from_double<CT>(v)};
      return mtk_pointwise<3>(t->device, op, index->ndim, index->sizes, st, f);
    });
  }));
  return MT_OK;
}

/* ---- masked_select: the elements of src where mask is set, in row-major order ----
 * flags (0/1 per position) -> inclusive scan (CUB) -> the last sum is the count, read back to
 * size out -> each selected element goes to position scan[i] - 1. */

template <class C> struct mtk_mask_flags_f {
  C *flags;
  const uint8_t *mask;
  MTK_D void operator()(int64_t i, const int64_t *off) const { flags[i] = mask[off[0]] != 0; }
};

template <class W, class C> struct mtk_mask_compact_f {
  W *out;
  const W *src;
  const C *pos;
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    C p = pos[i];
    if (p != (i ? pos[i - 1] : 0)) out[p - 1] = src[off[0]];
  }
};

template <class C>
static mt_status mtk_masked_select_run(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask, int64_t n) {
  const char *op = "masked_select";
  int device = src->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp flags, pos, scratch;
  MT_TRY(flags.alloc(device, (size_t)n * sizeof(C)));
  MT_TRY(pos.alloc(device, (size_t)n * sizeof(C)));
  const int64_t *mst[1] = {mask->strides};
  MT_TRY(mtk_pointwise<1>(device, op, src->ndim, src->sizes, mst,
                          mtk_mask_flags_f<C>{flags.as<C>(), mtk_ptr<uint8_t>(mask)}));
  size_t bytes = 0;
  MT_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, bytes, flags.as<C>(), pos.as<C>(), n, s), op);
  MT_TRY(scratch.alloc(device, bytes));
  MT_CUDA_TRY(cub::DeviceScan::InclusiveSum(scratch.as<void>(), bytes, flags.as<C>(), pos.as<C>(), n, s), op);
  C count = 0;
  MT_CUDA_TRY(cudaMemcpyAsync(&count, pos.as<C>() + (n - 1), sizeof count, cudaMemcpyDeviceToHost, s), op);
  MT_CUDA_TRY(cudaStreamSynchronize(s), op);
  int64_t cnt = (int64_t)count;
  MT_TRY(mt_tensor_resize(out, 1, &cnt));
  if (cnt == 0) return MT_OK;
  const int64_t *sst[1] = {src->strides};
  return mtk_dispatch_words(mt__dtype_size(src->dtype), [&](auto wtag) {
    typedef typename decltype(wtag)::type W;
    mtk_mask_compact_f<W, C> f{mtk_ptr<W>(out), mtk_ptr<W>(src), pos.as<C>()};
    return mtk_pointwise<1>(device, op, src->ndim, src->sizes, sst, f);
  });
}

extern "C" mt_status mt__cuda_masked_select(mt_tensor *out, const mt_tensor *src, const mt_tensor *mask) {
  const char *op = "masked_select";
  if (mask->dtype != MT_U8 && mask->dtype != MT_BOOL)
    return mt__error(MT_ERR_DTYPE, "%s: mask has dtype %s, expected uint8 or bool", op, mt_dtype_name(mask->dtype));
  if (out->dtype != src->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: result has dtype %s, source %s", op, mt_dtype_name(out->dtype),
                     mt_dtype_name(src->dtype));
  bool same = mask->ndim == src->ndim;
  for (int d = 0; same && d < src->ndim; d++) same = mask->sizes[d] == src->sizes[d];
  if (!same) {
    char b1[128], b2[128];
    return mt__error(MT_ERR_SHAPE, "%s: mask of size %s does not match source of size %s", op,
                     mt__shape_str(mask, b1, sizeof b1), mt__shape_str(src, b2, sizeof b2));
  }
  int64_t n = mt__numel(src);
  if (n == 0) {
    int64_t zero = 0;
    return mt_tensor_resize(out, 1, &zero);
  }
  /* 32-bit positions halve the scan's traffic whenever they can hold the count */
  if (n <= INT32_MAX) return mtk_masked_select_run<int32_t>(out, src, mask, n);
  return mtk_masked_select_run<int64_t>(out, src, mask, n);
}
