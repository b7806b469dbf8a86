/* mode.cu: CUDA body of torch.mode's second step (csrc/core/ops_mode.c sorts first): one
 * thread per line scans the sorted line for its longest run of equal values, as the CPU's
 * csrc/cpu/mode.c does. */
#include "common.cuh"

template <class T> struct mtk_mode_f {
  T *values;
  int64_t *indices;
  const T *sorted;
  const int64_t *order;
  int64_t n, sstride, ostride;
  /* NaNs (sorted together at the end) form one run */
  template <class CT> MTK_D static bool same(CT a, CT b) { return a == b || (mtk_isnan(a) && mtk_isnan(b)); }
  MTK_D void operator()(int64_t, const int64_t *off) const {
    typedef typename mtk_ct<T>::type CT;
    const T *s = sorted + off[2];
    CT best = mtk_ld(s), cur = best;
    int64_t best_len = 0, run = 0, best_at = 0;
    for (int64_t i = 0; i < n; i++) {
      CT v = mtk_ld(s + i * sstride);
      run = (i > 0 && same(v, cur)) ? run + 1 : 1;
      cur = v;
      /* a run is judged at its last element, where it is complete */
      if ((i == n - 1 || !same(mtk_ld(s + (i + 1) * sstride), v)) && run > best_len)
        best = v, best_len = run, best_at = i;
    }
    mtk_st(values + off[0], best);
    indices[off[1]] = order[off[3] + best_at * ostride];
  }
};

extern "C" mt_status mt__cuda_mode_lines(mt_tensor *values, mt_tensor *indices, const mt_tensor *sorted,
                                         const mt_tensor *order, int dim) {
  const char *op = "mode";
  const int64_t *st[4] = {values->strides, indices->strides, sorted->strides, order->strides};
  return mtk_dispatch(sorted->dtype, op, [&](auto tag) {
    typedef typename decltype(tag)::type T;
    mtk_mode_f<T> f{mtk_ptr<T>(values), mtk_ptr<int64_t>(indices), mtk_ptr<T>(sorted), mtk_ptr<int64_t>(order),
                    sorted->sizes[dim], sorted->strides[dim],      order->strides[dim]};
    return mtk_pointwise<4>(values->device, op, values->ndim, values->sizes, st, f);
  });
}
