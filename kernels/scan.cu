/* scan.cu: cumulative sum and product along one dimension. One thread walks one line: the
 * pointwise launcher runs over the shape with the scanned dim cut to 1 (the first element of
 * each line). Accumulation matches the CPU (csrc/cpu/scan.c): double for floating dtypes,
 * wrapping int64 for integers. */
#include "common.cuh"

template <class T> struct mtk_scan_f {
  typedef typename std::conditional<mtk_is_float<T>::value, double, int64_t>::type ACC;
  T *out;
  const T *a;
  int64_t n, so, sa;
  bool prod;
  MTK_D void operator()(int64_t, const int64_t *off) const {
    ACC acc = prod ? (ACC)1 : (ACC)0;
    for (int64_t i = 0; i < n; i++) {
      ACC v = (ACC)mtk_ld(a + off[1] + i * sa);
      if constexpr (mtk_is_float<T>::value) acc = prod ? acc * v : acc + v;
      else acc = (int64_t)(prod ? (uint64_t)acc * (uint64_t)v : (uint64_t)acc + (uint64_t)v);
      mtk_st(out + off[0] + i * so, acc);
    }
  }
};

extern "C" mt_status mt__cuda_scan(int prod, mt_tensor *out, const mt_tensor *a, int dim) {
  const char *op = prod ? "cumprod" : "cumsum";
  int64_t sizes[MT_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) sizes[d] = a->sizes[d];
  int64_t n = sizes[dim];
  sizes[dim] = 1;
  return mtk_dispatch(a->dtype, op, [&](auto tag) {
    typedef typename decltype(tag)::type T;
    mtk_scan_f<T> f{mtk_ptr<T>(out), mtk_ptr<T>(a), n, out->strides[dim], a->strides[dim], prod != 0};
    const int64_t *st[2] = {out->strides, a->strides};
    return mtk_pointwise<2>(out->device, op, a->ndim, sizes, st, f);
  });
}
