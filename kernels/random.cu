/* random.cu: uniform, normal and Bernoulli draws with Philox 4x32-10 (csrc/core/philox.h, the
 * same code the CPU runs). Element i of the contiguous tensor uses counter offset + i, so a seed
 * gives the CPU's numbers: uniform and Bernoulli bit for bit; normal to the last-ulp agreement of
 * CUDA's log/cos with the host's libm. The affine steps use explicit-rounding intrinsics so nvcc
 * cannot fuse them into an FMA the CPU does not perform. */
#include "common.cuh"

/* The largest value of a float dtype strictly below *p: a draw that rounds up to the excluded
 * upper bound steps down, as on the CPU. f16/bf16 step their sign-magnitude bit patterns. */
MTK_D void mtk_step_below(float *p) { *p = nextafterf(*p, -INFINITY); }
MTK_D void mtk_step_below(double *p) { *p = nextafter(*p, -INFINITY); }
template <class H> MTK_D void mtk_step_below_bits(H *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  if ((h & 0x7fff) == 0) h = 0x8001;
  else if (h & 0x8000) h = (uint16_t)(h + 1);
  else h = (uint16_t)(h - 1);
  memcpy(p, &h, 2);
}
MTK_D void mtk_step_below(__half *p) { mtk_step_below_bits(p); }
MTK_D void mtk_step_below(__nv_bfloat16 *p) { mtk_step_below_bits(p); }

/* uniform on [lo, hi): floats keep the draw, integers take its floor; bool is "nonzero" */
template <class T> struct mtk_uniform_f {
  T *t;
  uint64_t seed, offset;
  double lo, hi;
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    double u = mt_philox_uniform(seed, offset + (uint64_t)i);
    double v = __dadd_rn(lo, __dmul_rn(__dsub_rn(hi, lo), u));
    T *p = t + off[0];
    if constexpr (mtk_is_float<T>::value) {
      mtk_st(p, v);
      if ((double)mtk_ld(p) >= hi && hi > lo) mtk_step_below(p);
    } else {
      double f = floor(v);
      if (f >= hi && hi > lo) f = hi - 1;
      if constexpr (std::is_same<T, mtk_bool>::value) mtk_st(p, (int64_t)(f != 0));
      else mtk_st(p, mtk_from_double<int64_t>(f));
    }
  }
};

template <class T> struct mtk_normal_f {
  T *t;
  uint64_t seed, offset;
  double mean, std;
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    double z = mt_philox_normal(seed, offset + (uint64_t)i);
    double v = __dadd_rn(mean, __dmul_rn(std, z));
    if constexpr (mtk_is_float<T>::value) mtk_st(t + off[0], v);
    else mtk_st(t + off[0], mtk_from_double<int64_t>(v)); /* the entry point allows floats only */
  }
};

template <class T> struct mtk_bernoulli_f {
  T *t;
  uint64_t seed, offset;
  double p;
  MTK_D void operator()(int64_t i, const int64_t *off) const {
    double u = mt_philox_uniform(seed, offset + (uint64_t)i);
    if constexpr (mtk_is_float<T>::value) mtk_st(t + off[0], u < p ? 1.0 : 0.0);
    else mtk_st(t + off[0], (int64_t)(u < p));
  }
};

/* The entry points hand over contiguous tensors; the offsets calculator still honours any
 * strides so a strided tensor would get its elements in row-major order. */
template <template <class> class F, class... Args>
static mt_status mtk_draw(mt_tensor *t, const char *op, Args... args) {
  return mtk_dispatch(t->dtype, op, [&](auto tag) {
    typedef typename decltype(tag)::type T;
    F<T> f{mtk_ptr<T>(t), args...};
    const int64_t *st[1] = {t->strides};
    return mtk_pointwise<1>(t->device, op, t->ndim, t->sizes, st, f);
  });
}

extern "C" mt_status mt__cuda_random_uniform(mt_tensor *t, uint64_t seed, uint64_t offset, double lo, double hi) {
  return mtk_draw<mtk_uniform_f>(t, "uniform", seed, offset, lo, hi);
}

extern "C" mt_status mt__cuda_random_normal(mt_tensor *t, uint64_t seed, uint64_t offset, double mean, double std) {
  return mtk_draw<mtk_normal_f>(t, "normal", seed, offset, mean, std);
}

extern "C" mt_status mt__cuda_random_bernoulli(mt_tensor *t, uint64_t seed, uint64_t offset, double p) {
  return mtk_draw<mtk_bernoulli_f>(t, "bernoulli", seed, offset, p);
}
