/* optim.cu: the fused optimizer steps on CUDA, one pass over the flat parameter vector with
 * the formulas of csrc/nn/optim.c (SGD, Adam/AdamW) and optim_layerwise.c (LARS, LAMB), and the
 * gradient check of mixed-precision training. The layer-wise steps first reduce every segment's
 * norms (one launch per segment, atomics into a device array), read them back once, and then
 * apply each segment's trust ratio.
 *
 * Mixed precision: every kernel is a template over the master's storage type T (x and the
 * optimizer state) and the gradient's storage type G, which is also the type of the compute
 * copy (csrc/nn checks copy has dx's dtype). The gradient is read as (CT)dx * gscale in the
 * master's compute type CT, and the copy receives the stored (rounded) master value rounded
 * again to G, as the CPU bodies (csrc/cpu/optim_block.h) do; a plain step is T == G, gscale 1
 * and no copy. */
#include "nn_common.cuh"

/* the value a compute-type v becomes once stored as a T (what reading x back would give) */
template <class T, class CT> MTK_D CT nnk_rounded(CT v) {
  T r;
  mtk_st(&r, v);
  return (CT)mtk_ld(&r);
}

/* gradient element i in the master's compute type, times the step's scale */
template <class CT, class G> MTK_D CT nnk_grad(const G *dx, int64_t i, CT gs) { return (CT)mtk_ld(dx + i) * gs; }

/* SGD (Torch7's optim.sgd); lrs/wds may be null (factor 1, decay 0), copy may be null */
template <class T, class G> __global__ void nnk_sgd(int64_t n, T *x, const G *dx, T *buf, const T *lrs, const T *wds,
                                                    double lr_, double mom_, double damp_, double wd_, int nesterov,
                                                    int first, double gscale_, G *copy) {
  typedef typename mtk_ct<T>::type CT;
  CT lr = (CT)lr_, mom = (CT)mom_, damp = (CT)damp_, wd = (CT)wd_, gs = (CT)gscale_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT xi = mtk_ld(x + i);
    CT g = nnk_grad(dx, i, gs) + (wd + (wds ? (CT)mtk_ld(wds + i) : (CT)0)) * xi;
    if (mom != 0) {
      CT b = first ? g : mom * (CT)mtk_ld(buf + i) + (1 - damp) * g;
      mtk_st(buf + i, b);
      g = nesterov ? g + mom * b : b;
    }
    CT nx = nnk_rounded<T>(xi - lr * (lrs ? (CT)mtk_ld(lrs + i) : (CT)1) * g);
    mtk_st(x + i, nx);
    if (copy) mtk_st(copy + i, nx);
  }
}

/* Adam / AdamW with the host-computed constants of mt_adam_step */
template <class T, class G> __global__ void nnk_adam(int64_t n, T *x, const G *dx, T *m, T *v, double b1_, double b2_,
                                                     double eps_, double wd_, double decay_, double step_,
                                                     double isbc2_, double gscale_, G *copy) {
  typedef typename mtk_ct<T>::type CT;
  CT b1 = (CT)b1_, b2 = (CT)b2_, eps = (CT)eps_, wd = (CT)wd_, decay = (CT)decay_, step = (CT)step_, isbc2 = (CT)isbc2_,
     gs = (CT)gscale_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT xi = mtk_ld(x + i);
    CT g = nnk_grad(dx, i, gs) + wd * xi;
    CT mi = b1 * (CT)mtk_ld(m + i) + (1 - b1) * g;
    CT vi = b2 * (CT)mtk_ld(v + i) + (1 - b2) * g * g;
    mtk_st(m + i, mi);
    mtk_st(v + i, vi);
    CT nx = nnk_rounded<T>(xi * decay - step * mi / (sqrt(vi) * isbc2 + eps));
    mtk_st(x + i, nx);
    if (copy) mtk_st(copy + i, nx);
  }
}

/* LARS norms: acc[0] += sum x^2, acc[1] += sum (gscale*dx)^2, the scaled gradient formed in the
 * master's compute type as the update sees it */
template <class T, class G> __global__ void nnk_norms(int64_t n, const T *x, const G *dx, double gscale_, double *acc) {
  typedef typename mtk_ct<T>::type CT;
  __shared__ double sh[32];
  CT gs = (CT)gscale_;
  double ra = 0, rb = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double u = (double)mtk_ld(x + i), w = (double)nnk_grad(dx, i, gs);
    ra += u * u;
    rb += w * w;
  }
  nnk_block_sum2_add(ra, rb, sh, acc);
}

template <class T, class G> __global__ void nnk_lars_apply(int64_t n, T *x, const G *dx, T *buf, double s_, double mom_,
                                                           double wd_, int first, double gscale_, G *copy) {
  typedef typename mtk_ct<T>::type CT;
  CT s = (CT)s_, mom = (CT)mom_, wd = (CT)wd_, gs = (CT)gscale_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT xi = mtk_ld(x + i);
    CT g = s * (nnk_grad(dx, i, gs) + wd * xi);
    if (mom != 0) {
      g = first ? g : mom * (CT)mtk_ld(buf + i) + g;
      mtk_st(buf + i, g);
    }
    CT nx = nnk_rounded<T>(xi - g);
    mtk_st(x + i, nx);
    if (copy) mtk_st(copy + i, nx);
  }
}

/* LAMB pass 1: moments from g = gscale*dx (in double, as the CPU), then acc += {|x|^2, |u|^2}
 * with u from the stored (rounded) moments */
template <class T, class G> __global__ void nnk_lamb_moments(int64_t n, const T *x, const G *dx, T *m, T *v, double b1,
                                                             double b2, double ibc1, double ibc2, double eps, double wd,
                                                             double gscale, double *acc) {
  typedef typename mtk_ct<T>::type CT;
  __shared__ double sh[32];
  double rw = 0, ru = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double xi = (double)mtk_ld(x + i), g = nnk_grad(dx, i, gscale);
    double mi = b1 * (double)mtk_ld(m + i) + (1 - b1) * g;
    double vi = b2 * (double)mtk_ld(v + i) + (1 - b2) * g * g;
    mi = (double)nnk_rounded<T>((CT)mi);
    vi = (double)nnk_rounded<T>((CT)vi);
    mtk_st(m + i, (CT)mi);
    mtk_st(v + i, (CT)vi);
    double u = mi * ibc1 / (sqrt(vi * ibc2) + eps) + wd * xi;
    rw += xi * xi;
    ru += u * u;
  }
  nnk_block_sum2_add(rw, ru, sh, acc);
}

/* LAMB pass 2: x -= s*u; the copy gets the stored x */
template <class T, class G> __global__ void nnk_lamb_apply(int64_t n, T *x, const T *m, const T *v, double ibc1,
                                                           double ibc2, double eps, double wd, double s, G *copy) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double xi = (double)mtk_ld(x + i);
    double u = (double)mtk_ld(m + i) * ibc1 / (sqrt((double)mtk_ld(v + i) * ibc2) + eps) + wd * xi;
    CT nx = nnk_rounded<T>((CT)(xi - s * u));
    mtk_st(x + i, nx);
    if (copy) mtk_st(copy + i, nx);
  }
}

/* gradient check: acc[0] += number of inf/NaN elements, acc[1] += sum of squares of the finite
 * ones. The count travels as a double: exact up to 2^53 elements. Squares are summed in double
 * per thread (a float32 gradient's squares span more range than float keeps exactly, and a
 * float accumulator over millions of elements drifts); the pass is bound by memory, not by
 * double arithmetic, on the data-centre GPUs this runs on. */
template <class G> __global__ void nnk_grad_check(int64_t n, const G *g, double *acc) {
  __shared__ double sh[32];
  double bad = 0, ss = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double v = (double)mtk_ld(g + i);
    if (isfinite(v)) ss += v * v;
    else bad += 1;
  }
  nnk_block_sum2_add(bad, ss, sh, acc);
}

/* master dtype x gradient dtype: f(tag<T>, tag<G>), 4 x 4 instantiations of each step */
template <class F> static mt_status nnk_dispatch_mixed(int xdt, int gdt, const char *op, F &&f) {
  return nnk_dispatch_float(xdt, op, [&](auto xt) -> mt_status {
    return nnk_dispatch_float(gdt, op, [&](auto gt) -> mt_status { return f(xt, gt); });
  });
}

extern "C" mt_status mt__cuda_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                                       const mt_tensor *wds, double lr, double momentum, double dampening,
                                       double weight_decay, int nesterov, int first, double gscale, mt_tensor *copy) {
  const char *op = "sgd_step";
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_mixed(x->dtype, dx->dtype, op, [&](auto xt, auto gt) -> mt_status {
    using T = typename decltype(xt)::type;
    using G = typename decltype(gt)::type;
    nnk_sgd<T, G><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
        n, mtk_ptr<T>(x), mtk_ptr<G>(dx), buf ? mtk_ptr<T>(buf) : nullptr, lrs ? mtk_ptr<T>(lrs) : nullptr,
        wds ? mtk_ptr<T>(wds) : nullptr, lr, momentum, dampening, weight_decay, nesterov, first, gscale,
        copy ? mtk_ptr<G>(copy) : nullptr);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1,
                                        double beta2, double eps, double wd_l2, double decay, double step,
                                        double inv_sqrt_bc2, double gscale, mt_tensor *copy) {
  const char *op = "adam_step";
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_mixed(x->dtype, dx->dtype, op, [&](auto xt, auto gt) -> mt_status {
    using T = typename decltype(xt)::type;
    using G = typename decltype(gt)::type;
    nnk_adam<T, G><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
        n, mtk_ptr<T>(x), mtk_ptr<G>(dx), mtk_ptr<T>(m), mtk_ptr<T>(v), beta1, beta2, eps, wd_l2, decay, step,
        inv_sqrt_bc2, gscale, copy ? mtk_ptr<G>(copy) : nullptr);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

/* The frame of the layer-wise steps: reduce(xt, gt, acc) adds segment k's two sums into acc[2k]
 * and acc[2k + 1] on s; they are read back once into h, then apply(xt, gt, h) launches the
 * updates. */
template <class R, class A> static mt_status nnk_layerwise(const mt_tensor *x, const mt_tensor *dx, int nseg,
                                                           cudaStream_t s, const char *op, R &&reduce, A &&apply) {
  mtk_temp acc;
  MT_TRY(nnk_zeros(acc, x->device, s, 2 * (int64_t)nseg, op));
  double *h = (double *)malloc((size_t)nseg * 2 * sizeof(double));
  if (!h) return mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  mt_status st = nnk_dispatch_mixed(x->dtype, dx->dtype, op, [&](auto xt, auto gt) -> mt_status {
    MT_TRY(reduce(xt, gt, acc.as<double>()));
    MT_TRY(nnk_download(h, acc, 2 * (int64_t)nseg, s, op));
    return apply(xt, gt, (const double *)h);
  });
  free(h);
  return st;
}

extern "C" mt_status mt__cuda_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg,
                                        const int64_t *seg_offset, const int64_t *seg_length,
                                        const uint8_t *seg_exclude, double lr, double momentum, double weight_decay,
                                        double eta, double eps, int first, double *trust_out, double gscale,
                                        mt_tensor *copy) {
  const char *op = "lars_step";
  if (nseg == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  auto reduce = [&](auto xt, auto gt, double *acc) -> mt_status {
    using T = typename decltype(xt)::type;
    using G = typename decltype(gt)::type;
    const T *xp = mtk_ptr<T>(x);
    const G *gp = mtk_ptr<G>(dx);
    for (int k = 0; k < nseg; k++) {
      if (seg_length[k] == 0 || (seg_exclude && seg_exclude[k])) continue;
      nnk_norms<T, G><<<nnk_red_blocks(seg_length[k]), NNK_THREADS, 0, s>>>(seg_length[k], xp + seg_offset[k],
                                                                            gp + seg_offset[k], gscale, acc + 2 * k);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  auto apply = [&](auto xt, auto gt, const double *h) -> mt_status {
    using T = typename decltype(xt)::type;
    using G = typename decltype(gt)::type;
    T *xp = mtk_ptr<T>(x), *bp = buf ? mtk_ptr<T>(buf) : nullptr;
    const G *gp = mtk_ptr<G>(dx);
    G *cp = copy ? mtk_ptr<G>(copy) : nullptr;
    for (int k = 0; k < nseg; k++) {
      int64_t len = seg_length[k], o = seg_offset[k];
      int excl = seg_exclude && seg_exclude[k];
      double wd = excl ? 0 : weight_decay, local = 1;
      if (!excl && len > 0) {
        double wn = sqrt(h[2 * k]), gn = sqrt(h[2 * k + 1]);
        if (wn > 0 && gn > 0) local = eta * wn / (gn + wd * wn + eps);
      }
      if (trust_out) trust_out[k] = local;
      if (len == 0) continue;
      nnk_lars_apply<T, G><<<mtk_blocks(len, NNK_THREADS), NNK_THREADS, 0, s>>>(
          len, xp + o, gp + o, bp ? bp + o : nullptr, lr * local, momentum, wd, first, gscale, cp ? cp + o : nullptr);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  return nnk_layerwise(x, dx, nseg, s, op, reduce, apply);
}

extern "C" mt_status mt__cuda_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                                        const int64_t *seg_offset, const int64_t *seg_length,
                                        const uint8_t *seg_exclude, double beta1, double beta2, double ibc1,
                                        double ibc2, double lr, double eps, double weight_decay, double max_trust,
                                        double *trust_out, double gscale, mt_tensor *copy) {
  const char *op = "lamb_step";
  if (nseg == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  auto reduce = [&](auto xt, auto gt, double *acc) -> mt_status {
    using T = typename decltype(xt)::type;
    using G = typename decltype(gt)::type;
    T *mp = mtk_ptr<T>(m), *vp = mtk_ptr<T>(v);
    const T *xp = mtk_ptr<T>(x);
    const G *gp = mtk_ptr<G>(dx);
    for (int k = 0; k < nseg; k++) {
      int64_t len = seg_length[k], o = seg_offset[k];
      if (len == 0) continue;
      double wd = seg_exclude && seg_exclude[k] ? 0 : weight_decay;
      nnk_lamb_moments<T, G><<<nnk_red_blocks(len), NNK_THREADS, 0, s>>>(
          len, xp + o, gp + o, mp + o, vp + o, beta1, beta2, ibc1, ibc2, eps, wd, gscale, acc + 2 * k);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  auto apply = [&](auto xt, auto gt, const double *h) -> mt_status {
    using T = typename decltype(xt)::type;
    using G = typename decltype(gt)::type;
    T *xp = mtk_ptr<T>(x);
    const T *mp = mtk_ptr<T>(m), *vp = mtk_ptr<T>(v);
    G *cp = copy ? mtk_ptr<G>(copy) : nullptr;
    for (int k = 0; k < nseg; k++) {
      int64_t len = seg_length[k], o = seg_offset[k];
      int excl = seg_exclude && seg_exclude[k];
      double wd = excl ? 0 : weight_decay, trust = 1, w2 = h[2 * k], u2 = h[2 * k + 1];
      if (len > 0 && !excl && w2 > 0 && u2 > 0) {
        trust = sqrt(w2) / sqrt(u2);
        if (max_trust > 0 && trust > max_trust) trust = max_trust;
      }
      if (trust_out) trust_out[k] = trust;
      if (len == 0) continue;
      nnk_lamb_apply<T, G><<<mtk_blocks(len, NNK_THREADS), NNK_THREADS, 0, s>>>(
          len, xp + o, mp + o, vp + o, ibc1, ibc2, eps, wd, lr * trust, cp ? cp + o : nullptr);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  return nnk_layerwise(x, dx, nseg, s, op, reduce, apply);
}

extern "C" mt_status mt__cuda_grad_check(const mt_tensor *g, int64_t *nonfinite, double *sumsq) {
  const char *op = "grad_check";
  int64_t n = mt__numel(g);
  *nonfinite = 0;
  *sumsq = 0;
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(g->device);
  mtk_temp acc;
  MT_TRY(nnk_zeros(acc, g->device, s, 2, op));
  return nnk_dispatch_float(g->dtype, op, [&](auto gt) -> mt_status {
    using G = typename decltype(gt)::type;
    nnk_grad_check<G><<<nnk_red_blocks(n), NNK_THREADS, 0, s>>>(n, mtk_ptr<G>(g), acc.as<double>());
    MT_CUDA_LAUNCH_CHECK(op);
    double h[2];
    MT_TRY(nnk_download(h, acc, 2, s, op));
    *nonfinite = (int64_t)h[0];
    *sumsq = h[1];
    return MT_OK;
  });
}
