/* optim.cu: the fused optimizer steps on CUDA, one pass over the flat parameter vector with
 * the formulas of csrc/nn/optim.c (SGD, Adam/AdamW) and optim_layerwise.c (LARS, LAMB). The
 * layer-wise steps first reduce every segment's norms (one launch per segment, atomics into a
 * device array), read them back once, and then apply each segment's trust ratio. */
#include "nn_common.cuh"

/* SGD (Torch7's optim.sgd); lrs/wds may be null (factor 1, decay 0) */
template <class T>
__global__ void nnk_sgd(int64_t n, T *x, const T *dx, T *buf, const T *lrs, const T *wds, double lr_, double mom_,
                        double damp_, double wd_, int nesterov, int first) {
  typedef typename mtk_ct<T>::type CT;
  CT lr = (CT)lr_, mom = (CT)mom_, damp = (CT)damp_, wd = (CT)wd_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT xi = mtk_ld(x + i);
    CT g = (CT)mtk_ld(dx + i) + (wd + (wds ? (CT)mtk_ld(wds + i) : (CT)0)) * xi;
    if (mom != 0) {
      CT b = first ? g : mom * (CT)mtk_ld(buf + i) + (1 - damp) * g;
      mtk_st(buf + i, b);
      g = nesterov ? g + mom * b : b;
    }
    mtk_st(x + i, xi - lr * (lrs ? (CT)mtk_ld(lrs + i) : (CT)1) * g);
  }
}

/* Adam / AdamW with the host-computed constants of mt_adam_step */
template <class T>
__global__ void nnk_adam(int64_t n, T *x, const T *dx, T *m, T *v, double b1_, double b2_, double eps_, double wd_,
                         double decay_, double step_, double isbc2_) {
  typedef typename mtk_ct<T>::type CT;
  CT b1 = (CT)b1_, b2 = (CT)b2_, eps = (CT)eps_, wd = (CT)wd_, decay = (CT)decay_, step = (CT)step_, isbc2 = (CT)isbc2_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT xi = mtk_ld(x + i);
    CT g = (CT)mtk_ld(dx + i) + wd * xi;
    CT mi = b1 * (CT)mtk_ld(m + i) + (1 - b1) * g;
    CT vi = b2 * (CT)mtk_ld(v + i) + (1 - b2) * g * g;
    mtk_st(m + i, mi);
    mtk_st(v + i, vi);
    mtk_st(x + i, xi * decay - step * mi / (sqrt(vi) * isbc2 + eps));
  }
}

/* acc[0] += sum a^2, acc[1] += sum b^2 */
template <class T>
__global__ void nnk_norms(int64_t n, const T *a, const T *b, double *acc) {
  __shared__ double sh[32];
  double ra = 0, rb = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double u = (double)mtk_ld(a + i), w = (double)mtk_ld(b + i);
    ra += u * u;
    rb += w * w;
  }
  nnk_block_sum2_add(ra, rb, sh, acc);
}

template <class T>
__global__ void nnk_lars_apply(int64_t n, T *x, const T *dx, T *buf, double s_, double mom_, double wd_, int first) {
  typedef typename mtk_ct<T>::type CT;
  CT s = (CT)s_, mom = (CT)mom_, wd = (CT)wd_;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    CT xi = mtk_ld(x + i);
    CT g = s * ((CT)mtk_ld(dx + i) + wd * xi);
    if (mom != 0) {
      g = first ? g : mom * (CT)mtk_ld(buf + i) + g;
      mtk_st(buf + i, g);
    }
    mtk_st(x + i, xi - g);
  }
}

/* LAMB pass 1: moments, then acc += {|x|^2, |u|^2} with u from the stored (rounded) moments */
template <class T>
__global__ void nnk_lamb_moments(int64_t n, const T *x, const T *dx, T *m, T *v, double b1, double b2, double ibc1,
                                 double ibc2, double eps, double wd, double *acc) {
  __shared__ double sh[32];
  double rw = 0, ru = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double xi = (double)mtk_ld(x + i), g = (double)mtk_ld(dx + i);
    double mi = b1 * (double)mtk_ld(m + i) + (1 - b1) * g;
    double vi = b2 * (double)mtk_ld(v + i) + (1 - b2) * g * g;
    mtk_st(m + i, (typename mtk_ct<T>::type)mi);
    mtk_st(v + i, (typename mtk_ct<T>::type)vi);
    mi = (double)mtk_ld(m + i);
    vi = (double)mtk_ld(v + i);
    double u = mi * ibc1 / (sqrt(vi * ibc2) + eps) + wd * xi;
    rw += xi * xi;
    ru += u * u;
  }
  nnk_block_sum2_add(rw, ru, sh, acc);
}

template <class T>
__global__ void nnk_lamb_apply(int64_t n, T *x, const T *m, const T *v, double ibc1, double ibc2, double eps,
                               double wd, double s) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double xi = (double)mtk_ld(x + i);
    double u = (double)mtk_ld(m + i) * ibc1 / (sqrt((double)mtk_ld(v + i) * ibc2) + eps) + wd * xi;
    mtk_st(x + i, (typename mtk_ct<T>::type)(xi - s * u));
  }
}

extern "C" mt_status mt__cuda_sgd_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, const mt_tensor *lrs,
                                       const mt_tensor *wds, double lr, double momentum, double dampening,
                                       double weight_decay, int nesterov, int first) {
  const char *op = "sgd_step";
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_sgd<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
        n, mtk_ptr<T>(x), mtk_ptr<T>(dx), buf ? mtk_ptr<T>(buf) : nullptr, lrs ? mtk_ptr<T>(lrs) : nullptr,
        wds ? mtk_ptr<T>(wds) : nullptr, lr, momentum, dampening, weight_decay, nesterov, first);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_adam_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, double beta1,
                                        double beta2, double eps, double wd_l2, double decay, double step,
                                        double inv_sqrt_bc2) {
  const char *op = "adam_step";
  int64_t n = mt__numel(x);
  if (n == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  return nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_adam<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(n, mtk_ptr<T>(x), mtk_ptr<T>(dx), mtk_ptr<T>(m),
                                                                    mtk_ptr<T>(v), beta1, beta2, eps, wd_l2, decay,
                                                                    step, inv_sqrt_bc2);
    MT_CUDA_LAUNCH_CHECK(op);
    return MT_OK;
  });
}

/* The frame of the layer-wise steps: reduce(tag, acc) adds segment k's two sums into acc[2k] and
 * acc[2k + 1] on s; they are read back once into h, then apply(tag, h) launches the updates. */
template <class R, class A>
static mt_status nnk_layerwise(const mt_tensor *x, int nseg, cudaStream_t s, const char *op, R &&reduce, A &&apply) {
  mtk_temp acc;
  MT_TRY(nnk_zeros(acc, x->device, s, 2 * (int64_t)nseg, op));
  double *h = (double *)malloc((size_t)nseg * 2 * sizeof(double));
  if (!h) return mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  mt_status st = nnk_dispatch_float(x->dtype, op, [&](auto tag) -> mt_status {
    MT_TRY(reduce(tag, acc.as<double>()));
    MT_TRY(nnk_download(h, acc, 2 * (int64_t)nseg, s, op));
    return apply(tag, (const double *)h);
  });
  free(h);
  return st;
}

extern "C" mt_status mt__cuda_lars_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *buf, int nseg,
                                        const int64_t *seg_offset, const int64_t *seg_length,
                                        const uint8_t *seg_exclude, double lr, double momentum, double weight_decay,
                                        double eta, double eps, int first, double *trust_out) {
  const char *op = "lars_step";
  if (nseg == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  auto reduce = [&](auto tag, double *acc) -> mt_status {
    using T = typename decltype(tag)::type;
    const T *xp = mtk_ptr<T>(x), *gp = mtk_ptr<T>(dx);
    for (int k = 0; k < nseg; k++) {
      if (seg_length[k] == 0 || (seg_exclude && seg_exclude[k])) continue;
      nnk_norms<T><<<nnk_red_blocks(seg_length[k]), NNK_THREADS, 0, s>>>(seg_length[k], xp + seg_offset[k],
                                                                         gp + seg_offset[k], acc + 2 * k);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  auto apply = [&](auto tag, const double *h) -> mt_status {
    using T = typename decltype(tag)::type;
    T *xp = mtk_ptr<T>(x), *bp = buf ? mtk_ptr<T>(buf) : nullptr;
    const T *gp = mtk_ptr<T>(dx);
    for (int k = 0; k < nseg; k++) {
      int64_t len = seg_length[k];
      int excl = seg_exclude && seg_exclude[k];
      double wd = excl ? 0 : weight_decay, local = 1;
      if (!excl && len > 0) {
        double wn = sqrt(h[2 * k]), gn = sqrt(h[2 * k + 1]);
        if (wn > 0 && gn > 0) local = eta * wn / (gn + wd * wn + eps);
      }
      if (trust_out) trust_out[k] = local;
      if (len == 0) continue;
      nnk_lars_apply<T><<<mtk_blocks(len, NNK_THREADS), NNK_THREADS, 0, s>>>(
          len, xp + seg_offset[k], gp + seg_offset[k], bp ? bp + seg_offset[k] : nullptr, lr * local, momentum, wd,
          first);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  return nnk_layerwise(x, nseg, s, op, reduce, apply);
}

extern "C" mt_status mt__cuda_lamb_step(mt_tensor *x, const mt_tensor *dx, mt_tensor *m, mt_tensor *v, int nseg,
                                        const int64_t *seg_offset, const int64_t *seg_length,
                                        const uint8_t *seg_exclude, double beta1, double beta2, double ibc1,
                                        double ibc2, double lr, double eps, double weight_decay, double max_trust,
                                        double *trust_out) {
  const char *op = "lamb_step";
  if (nseg == 0) return MT_OK;
  cudaStream_t s = mt__cuda_stream(x->device);
  auto reduce = [&](auto tag, double *acc) -> mt_status {
    using T = typename decltype(tag)::type;
    T *mp = mtk_ptr<T>(m), *vp = mtk_ptr<T>(v);
    const T *xp = mtk_ptr<T>(x), *gp = mtk_ptr<T>(dx);
    for (int k = 0; k < nseg; k++) {
      int64_t len = seg_length[k], o = seg_offset[k];
      if (len == 0) continue;
      double wd = seg_exclude && seg_exclude[k] ? 0 : weight_decay;
      nnk_lamb_moments<T><<<nnk_red_blocks(len), NNK_THREADS, 0, s>>>(len, xp + o, gp + o, mp + o, vp + o, beta1, beta2,
                                                                      ibc1, ibc2, eps, wd, acc + 2 * k);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  auto apply = [&](auto tag, const double *h) -> mt_status {
    using T = typename decltype(tag)::type;
    T *xp = mtk_ptr<T>(x);
    const T *mp = mtk_ptr<T>(m), *vp = mtk_ptr<T>(v);
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
      nnk_lamb_apply<T><<<mtk_blocks(len, NNK_THREADS), NNK_THREADS, 0, s>>>(len, xp + o, mp + o, vp + o, ibc1, ibc2,
                                                                              eps, wd, lr * trust);
      MT_CUDA_LAUNCH_CHECK(op);
    }
    return MT_OK;
  };
  return nnk_layerwise(x, nseg, s, op, reduce, apply);
}
