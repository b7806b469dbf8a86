/* nn_batchnorm.cu: batch normalization on CUDA with csrc/nn/batchnorm.c's formulas: training
 * normalises with the biased batch variance, moves the running variance with the unbiased one
 * (Torch7), saves mean and 1/sqrt(var + eps); evaluation uses the running statistics.
 * Per-channel sums run on a grid of (channel, chunk) blocks that add their block sums into a
 * double accumulator per channel (so a few channels with many values still fill the GPU); the
 * variance is a second pass about the mean, as on the CPU. A per-channel finalize kernel turns
 * the sums into statistics and coefficients that the elementwise pass reads. */
#include "nn_common.cuh"

/* blocks per channel: enough to fill the GPU when channels are few, none idle when values are */
static unsigned chunks(int64_t C, int64_t M) {
  int64_t per = (M + NNK_THREADS * 4 - 1) / (NNK_THREADS * 4);
  int64_t want = (1024 + C - 1) / C;
  int64_t p = per < want ? per : want;
  return (unsigned)(p < 1 ? 1 : p > 64 ? 64 : p);
}

/* acc[2c] += sum x (pass 0) or acc[2c+1] += sum (x - mean)^2 with mean = acc[2c] / M (pass 1) */
template <class T>
__global__ void nnk_bn_sums(const T *x, double *acc, int64_t C, int64_t S, int64_t M, int pass) {
  __shared__ double sh[32];
  int64_t c = blockIdx.x;
  double mean = pass ? acc[2 * c] / (double)M : 0.0, a = 0;
  for (int64_t j = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; j < M; j += (int64_t)gridDim.y * blockDim.x) {
    int64_t n = j / S, s = j - n * S;
    double v = (double)mtk_ld(x + (n * C + c) * S + s) - mean;
    a += pass ? v * v : v;
  }
  a = nnk_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc + 2 * c + pass, a);
}

/* statistics and coef[c] = {mean, k, b}: y = (x - mean) * k + b */
template <class T>
__global__ void nnk_bn_finalize(const double *acc, const T *weight, const T *bias, T *rmean, T *rvar, T *smean,
                                T *sinvstd, double *coef, int64_t C, int64_t M, int train, double momentum,
                                double eps) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    double mean, invstd;
    if (train) {
      mean = acc[2 * c] / (double)M;
      double sq = acc[2 * c + 1];
      invstd = 1.0 / sqrt(sq / (double)M + eps);
      mtk_st(smean + c, (CT)mean);
      mtk_st(sinvstd + c, (CT)invstd);
      if (rmean) mtk_st(rmean + c, (CT)((1 - momentum) * (double)mtk_ld(rmean + c) + momentum * mean));
      if (rvar) mtk_st(rvar + c, (CT)((1 - momentum) * (double)mtk_ld(rvar + c) + momentum * sq / (double)(M - 1)));
    } else {
      mean = (double)mtk_ld(rmean + c);
      invstd = 1.0 / sqrt((double)mtk_ld(rvar + c) + eps);
    }
    coef[3 * c] = mean;
    coef[3 * c + 1] = invstd * (weight ? (double)mtk_ld(weight + c) : 1.0);
    coef[3 * c + 2] = bias ? (double)mtk_ld(bias + c) : 0.0;
  }
}

template <class T>
__global__ void nnk_bn_apply(const T *x, T *y, const double *coef, int64_t C, int64_t S, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    const double *k = coef + 3 * c;
    mtk_st(y + i, (typename mtk_ct<T>::type)(((double)mtk_ld(x + i) - k[0]) * k[1] + k[2]));
  }
}

/* the mean the backward pass uses: saved batch mean (train) or the running mean */
template <class T> MTK_D double bn_mean(const T *rmean, const T *smean, int64_t c, int train) {
  return train ? (double)mtk_ld(smean + c) : (double)mtk_ld(rmean + c);
}

/* acc[2c] += sum go, acc[2c+1] += sum go * (x - mean) */
template <class T>
__global__ void nnk_bn_grad_sums(const T *x, const T *g, const T *rmean, const T *smean, double *acc, int64_t C,
                                 int64_t S, int64_t M, int train) {
  __shared__ double sh[32];
  int64_t c = blockIdx.x;
  double mean = bn_mean(rmean, smean, c, train), sg = 0, sgx = 0;
  for (int64_t j = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; j < M; j += (int64_t)gridDim.y * blockDim.x) {
    int64_t n = j / S, s = j - n * S, o = (n * C + c) * S + s;
    double gv = (double)mtk_ld(g + o);
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
template <class T>
__global__ void nnk_bn_grad_finalize(const double *acc, const T *weight, const T *rmean, const T *rvar,
                                     const T *smean, const T *sinvstd, T *gw, T *gb, double *coef, int64_t C,
                                     int64_t M, int train, double scale, double eps) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    double mean = bn_mean(rmean, smean, c, train);
    double invstd = train ? (double)mtk_ld(sinvstd + c) : 1.0 / sqrt((double)mtk_ld(rvar + c) + eps);
    double sg = acc[2 * c], sgx = acc[2 * c + 1];
    if (gw) mtk_st(gw + c, (CT)((double)mtk_ld(gw + c) + scale * sgx * invstd));
    if (gb) mtk_st(gb + c, (CT)((double)mtk_ld(gb + c) + scale * sg));
    double w = weight ? (double)mtk_ld(weight + c) : 1.0;
    coef[4 * c] = mean;
    coef[4 * c + 1] = w * invstd;
    coef[4 * c + 2] = train ? sg / (double)M : 0.0; /* d/dx through the batch mean and variance */
    coef[4 * c + 3] = train ? sgx / (double)M * invstd * invstd : 0.0;
  }
}

template <class T>
__global__ void nnk_bn_grad_input(const T *x, const T *g, T *r, const double *coef, int64_t C, int64_t S, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    const double *k = coef + 4 * c;
    double v = k[1] * ((double)mtk_ld(g + i) - k[2] - ((double)mtk_ld(x + i) - k[0]) * k[3]);
    mtk_st(r + i, (typename mtk_ct<T>::type)v);
  }
}

#define BN_OP "nn.BatchNormalization"

template <class T> static T *opt_ptr(const mt_tensor *t) { return t ? mtk_ptr<T>(t) : nullptr; }

extern "C" mt_status mt__cuda_batchnorm_forward(mt_tensor *y, const mt_tensor *x, const mt_tensor *weight,
                                                   const mt_tensor *bias, mt_tensor *running_mean,
                                                   mt_tensor *running_var, mt_tensor *save_mean,
                                                   mt_tensor *save_invstd, int train, double momentum, double eps,
                                                   int64_t N, int64_t C, int64_t S) {
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
        nnk_bn_sums<T><<<grid, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), acc.as<double>(), C, S, M, pass);
        MT_CUDA_LAUNCH_CHECK(BN_OP);
      }
    }
    nnk_bn_finalize<T><<<mtk_blocks(C, NNK_THREADS), NNK_THREADS, 0, s>>>(
        train ? acc.as<double>() : nullptr, opt_ptr<T>(weight), opt_ptr<T>(bias), opt_ptr<T>(running_mean),
        opt_ptr<T>(running_var), opt_ptr<T>(save_mean), opt_ptr<T>(save_invstd), coef.as<double>(), C, M, train,
        momentum, eps);
    MT_CUDA_LAUNCH_CHECK(BN_OP);
    if (n > 0) {
      nnk_bn_apply<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(y), coef.as<double>(),
                                                                          C, S, n);
      MT_CUDA_LAUNCH_CHECK(BN_OP);
    }
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_batchnorm_backward(mt_tensor *r, mt_tensor *gradWeight, mt_tensor *gradBias,
                                                    const mt_tensor *x, const mt_tensor *g, const mt_tensor *weight,
                                                    const mt_tensor *running_mean, const mt_tensor *running_var,
                                                    const mt_tensor *save_mean, const mt_tensor *save_invstd,
                                                    int train, double scale, double eps, int64_t N, int64_t C,
                                                    int64_t S) {
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
      nnk_bn_grad_sums<T><<<grid, NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(g), opt_ptr<T>(running_mean),
                                                        opt_ptr<T>(save_mean), acc.as<double>(), C, S, M, train);
      MT_CUDA_LAUNCH_CHECK(BN_OP);
    }
    nnk_bn_grad_finalize<T><<<mtk_blocks(C, NNK_THREADS), NNK_THREADS, 0, s>>>(
        acc.as<double>(), opt_ptr<T>(weight), opt_ptr<T>(running_mean), opt_ptr<T>(running_var),
        opt_ptr<T>(save_mean), opt_ptr<T>(save_invstd), opt_ptr<T>(gradWeight), opt_ptr<T>(gradBias),
        coef.as<double>(), C, M, train, scale, eps);
    MT_CUDA_LAUNCH_CHECK(BN_OP);
    if (r && n > 0) {
      nnk_bn_grad_input<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(x), mtk_ptr<T>(g), mtk_ptr<T>(r),
                                                                               coef.as<double>(), C, S, n);
      MT_CUDA_LAUNCH_CHECK(BN_OP);
    }
    return MT_OK;
  });
}
