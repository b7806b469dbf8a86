/* nn_batchnorm.cu: batch normalization on CUDA with csrc/nn/batchnorm.c's formulas: training
 * normalises with the biased batch variance, moves the running variance with the unbiased one
 * (Torch7), saves mean and 1/sqrt(var + eps); evaluation uses the running statistics. The
 * fused forms add a residual and apply a ReLU in the elementwise pass, rounding as the CPU does
 * (BN output to the dtype, then the sum, then the clamp); their backward masks gradOutput by
 * output > 0 on the fly and writes the residual's gradient in the gradInput pass.
 * Per-channel sums run on a grid of (channel, chunk) blocks that add their block sums into a
 * double accumulator per channel (so a few channels with many values still fill the GPU); the
 * variance is a second pass about the mean, as on the CPU. A per-channel finalize kernel turns
 * the sums into statistics and coefficients that the elementwise pass reads. The per-channel
 * tensors (statistics, parameters, their gradients) are read and written through a runtime
 * dtype (the input's or float32), so only the elementwise kernels are templates.
 * Layout: element (n, c, s) at (n C + c) S + s, or (cl) channels-last (n S + s) C + c. */
#include "nn_common.cuh"

/* blocks per channel: enough to fill the GPU when channels are few, none idle when values are */
static unsigned chunks(int64_t C, int64_t M) {
  int64_t per = (M + NNK_THREADS * 4 - 1) / (NNK_THREADS * 4);
  int64_t want = (1024 + C - 1) / C;
  int64_t p = per < want ? per : want;
  return (unsigned)(p < 1 ? 1 : p > 64 ? 64 : p);
}

/* a per-channel tensor (or none) of a float dtype, read and written as doubles */
struct bnv {
  void *p;
  int dt;
};
static bnv vec(const mt_tensor *t) { return bnv{t ? (void *)mt__data(t) : nullptr, t ? (int)t->dtype : (int)MT_F32}; }
MTK_D double bnv_ld(bnv v, int64_t c) {
  switch (v.dt) {
    case MT_F32: return ((const float *)v.p)[c];
    case MT_F64: return ((const double *)v.p)[c];
    case MT_F16: return __half2float(((const __half *)v.p)[c]);
    default: return __bfloat162float(((const __nv_bfloat16 *)v.p)[c]);
  }
}
MTK_D void bnv_st(bnv v, int64_t c, double x) {
  switch (v.dt) {
    case MT_F32: ((float *)v.p)[c] = (float)x; break;
    case MT_F64: ((double *)v.p)[c] = x; break;
    case MT_F16: ((__half *)v.p)[c] = __float2half_rn((float)x); break;
    default: ((__nv_bfloat16 *)v.p)[c] = __float2bfloat16_rn((float)x); break;
  }
}

/* offset of the j-th value (j = n S + s) of channel c */
MTK_D int64_t bn_off(int64_t j, int64_t c, int64_t C, int64_t S, int cl) {
  int64_t n = j / S, s = j - n * S;
  return cl ? (n * S + s) * C + c : (n * C + c) * S + s;
}
/* the channel of element i */
MTK_D int64_t bn_chan(int64_t i, int64_t C, int64_t S, int cl) { return cl ? i % C : (i / S) % C; }

/* acc[2c] += sum x (pass 0) or acc[2c+1] += sum (x - mean)^2 with mean = acc[2c] / M (pass 1) */
template <class T>
__global__ void nnk_bn_sums(const T *x, double *acc, int64_t C, int64_t S, int64_t M, int pass, int cl) {
  __shared__ double sh[32];
  int64_t c = blockIdx.x;
  double mean = pass ? acc[2 * c] / (double)M : 0.0, a = 0;
  for (int64_t j = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; j < M; j += (int64_t)gridDim.y * blockDim.x) {
    double v = (double)mtk_ld(x + bn_off(j, c, C, S, cl)) - mean;
    a += pass ? v * v : v;
  }
  a = nnk_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc + 2 * c + pass, a);
}

/* statistics and coef[c] = {mean, k, b}: y = (x - mean) * k + b */
__global__ void nnk_bn_finalize(const double *acc, bnv weight, bnv bias, bnv rmean, bnv rvar, bnv smean, bnv sinvstd,
                                double *coef, int64_t C, int64_t M, int train, double momentum, double eps) {
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    double mean, invstd;
    if (train) {
      mean = acc[2 * c] / (double)M;
      double sq = acc[2 * c + 1];
      invstd = 1.0 / sqrt(sq / (double)M + eps);
      bnv_st(smean, c, mean);
      bnv_st(sinvstd, c, invstd);
      if (rmean.p) bnv_st(rmean, c, (1 - momentum) * bnv_ld(rmean, c) + momentum * mean);
      if (rvar.p) bnv_st(rvar, c, (1 - momentum) * bnv_ld(rvar, c) + momentum * sq / (double)(M - 1));
    } else {
      mean = bnv_ld(rmean, c);
      invstd = 1.0 / sqrt(bnv_ld(rvar, c) + eps);
    }
    coef[3 * c] = mean;
    coef[3 * c + 1] = invstd * (weight.p ? bnv_ld(weight, c) : 1.0);
    coef[3 * c + 2] = bias.p ? bnv_ld(bias, c) : 0.0;
  }
}

/* y = relu?(round(bn(x)) + res), each step rounded to T */
template <class T> __global__ void nnk_bn_apply(const T *x, const T *res, T *y, const double *coef, int64_t C,
                                                int64_t S, int64_t n, int relu, int cl) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const double *k = coef + 3 * bn_chan(i, C, S, cl);
    T t;
    mtk_st(&t, (CT)(((double)mtk_ld(x + i) - k[0]) * k[1] + k[2]));
    CT v = mtk_ld(&t);
    if (res) {
      mtk_st(&t, (CT)(v + mtk_ld(res + i)));
      v = mtk_ld(&t);
    }
    if (relu) v = v > 0 ? v : (CT)0;
    mtk_st(y + i, v);
  }
}

/* gradOutput at o, masked by the ReLU (output > 0) when y is given */
template <class T> MTK_D double bn_go(const T *g, const T *y, int64_t o) {
  return y && !(mtk_ld(y + o) > 0) ? 0.0 : (double)mtk_ld(g + o);
}

/* acc[2c] += sum go, acc[2c+1] += sum go * (x - mean) */
template <class T> __global__ void nnk_bn_grad_sums(const T *x, const T *g, const T *y, bnv rmean, bnv smean,
                                                    double *acc, int64_t C, int64_t S, int64_t M, int train, int cl) {
  __shared__ double sh[32];
  int64_t c = blockIdx.x;
  double mean = train ? bnv_ld(smean, c) : bnv_ld(rmean, c), sg = 0, sgx = 0;
  for (int64_t j = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; j < M; j += (int64_t)gridDim.y * blockDim.x) {
    int64_t o = bn_off(j, c, C, S, cl);
    double gv = bn_go(g, y, o);
    sg += gv;
    sgx += gv * ((double)mtk_ld(x + o) - mean);
  }
  sg = nnk_block_sum(sg, sh);
  sgx = nnk_block_sum(sgx, sh);
  if (threadIdx.x == 0) {
    atomicAdd(acc + 2 * c, sg);
    atomicAdd(acc + 2 * c + 1, sgx);
  }
}

/* parameter gradients += scale * ..., and coef[c] = {mean, k, a, bcoef} for
 * gi = k (go - a - (x - mean) bcoef) */
__global__ void nnk_bn_grad_finalize(const double *acc, bnv weight, bnv rmean, bnv rvar, bnv smean, bnv sinvstd, bnv gw,
                                     bnv gb, double *coef, int64_t C, int64_t M, int train, double scale, double eps) {
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    double mean = train ? bnv_ld(smean, c) : bnv_ld(rmean, c);
    double invstd = train ? bnv_ld(sinvstd, c) : 1.0 / sqrt(bnv_ld(rvar, c) + eps);
    double sg = acc[2 * c], sgx = acc[2 * c + 1];
    if (gw.p) bnv_st(gw, c, bnv_ld(gw, c) + scale * sgx * invstd);
    if (gb.p) bnv_st(gb, c, bnv_ld(gb, c) + scale * sg);
    double w = weight.p ? bnv_ld(weight, c) : 1.0;
    coef[4 * c] = mean;
    coef[4 * c + 1] = w * invstd;
    coef[4 * c + 2] = train ? sg / (double)M : 0.0; /* d/dx through the batch mean and variance */
    coef[4 * c + 3] = train ? sgx / (double)M * invstd * invstd : 0.0;
  }
}

template <class T> __global__ void nnk_bn_grad_input(const T *x, const T *g, const T *y, T *r, T *gr,
                                                     const double *coef, int64_t C, int64_t S, int64_t n, int cl) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const double *k = coef + 4 * bn_chan(i, C, S, cl);
    double gv = bn_go(g, y, i);
    if (gr) mtk_st(gr + i, (CT)gv);
    if (r) mtk_st(r + i, (CT)(k[1] * (gv - k[2] - ((double)mtk_ld(x + i) - k[0]) * k[3])));
  }
}

#define BN_OP "nn.BatchNormalization"

template <class T> static T *opt_ptr(const mt_tensor *t) { return t ? mtk_ptr<T>(t) : nullptr; }

extern "C" mt_status mt__cuda_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *res,
                                                const mt_tensor *weight, const mt_tensor *bias, mt_tensor *running_mean,
                                                mt_tensor *running_var, mt_tensor *save_mean, mt_tensor *save_invstd,
                                                int train, double momentum, double eps, int relu, int64_t N, int64_t C,
                                                int64_t S, int cl) {
  if (C == 0) return MT_OK;
  int device = x->device;
  cudaStream_t s = mt__cuda_stream(device);
  int64_t M = N * S, n = N * C * S, nc = 3 * C;
  mtk_temp coef, acc;
  MT_TRY(coef.alloc_tensor(MT_F64, device, 1, &nc));
  if (train) MT_TRY(nnk_zeros(acc, device, s, 2 * C, BN_OP));
  return nnk_dispatch_float(x->dtype, BN_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    if (train) {
      dim3 grid((unsigned)C, chunks(C, M));
      for (int pass = 0; pass < 2; pass++) {
        nnk_bn_sums<T><<<grid, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), acc.as<double>(), C, S, M, pass, cl);
        MT_CUDA_LAUNCH_CHECK(BN_OP);
      }
    }
    nnk_bn_finalize<<<mtk_blocks(C, NNK_THREADS), NNK_THREADS, 0, s>>>(
        train ? acc.as<double>() : nullptr, vec(weight), vec(bias), vec(running_mean), vec(running_var), vec(save_mean),
        vec(save_invstd), coef.as<double>(), C, M, train, momentum, eps);
    MT_CUDA_LAUNCH_CHECK(BN_OP);
    if (n > 0) {
      nnk_bn_apply<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), opt_ptr<T>(res), mtk_ptr<T>(y),
                                                                         coef.as<double>(), C, S, n, relu, cl);
      MT_CUDA_LAUNCH_CHECK(BN_OP);
    }
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_batchnorm_backward(mt_tensor *r, mt_tensor *gr, mt_tensor *gradWeight,
                                                 mt_tensor *gradBias, const mt_tensor *x, const mt_tensor *g,
                                                 const mt_tensor *y, const mt_tensor *weight,
                                                 const mt_tensor *running_mean, const mt_tensor *running_var,
                                                 const mt_tensor *save_mean, const mt_tensor *save_invstd, int train,
                                                 double scale, double eps, int64_t N, int64_t C, int64_t S, int cl) {
  if (C == 0) return MT_OK;
  int device = x->device;
  cudaStream_t s = mt__cuda_stream(device);
  int64_t M = N * S, n = N * C * S, nc = 4 * C;
  mtk_temp coef, acc;
  MT_TRY(coef.alloc_tensor(MT_F64, device, 1, &nc));
  MT_TRY(nnk_zeros(acc, device, s, 2 * C, BN_OP));
  return nnk_dispatch_float(x->dtype, BN_OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    if (M > 0) {
      dim3 grid((unsigned)C, chunks(C, M));
      nnk_bn_grad_sums<T><<<grid, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(g), opt_ptr<T>(y), vec(running_mean),
                                                       vec(save_mean), acc.as<double>(), C, S, M, train, cl);
      MT_CUDA_LAUNCH_CHECK(BN_OP);
    }
    nnk_bn_grad_finalize<<<mtk_blocks(C, NNK_THREADS), NNK_THREADS, 0, s>>>(
        acc.as<double>(), vec(weight), vec(running_mean), vec(running_var), vec(save_mean), vec(save_invstd),
        vec(gradWeight), vec(gradBias), coef.as<double>(), C, M, train, scale, eps);
    MT_CUDA_LAUNCH_CHECK(BN_OP);
    if ((r || gr) && n > 0) {
      nnk_bn_grad_input<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(
          mtk_ptr<T>(x), mtk_ptr<T>(g), opt_ptr<T>(y), opt_ptr<T>(r), opt_ptr<T>(gr), coef.as<double>(), C, S, n, cl);
      MT_CUDA_LAUNCH_CHECK(BN_OP);
    }
    return MT_OK;
  });
}
