/* nn_conv_bias.cu: the bias of a convolution on CUDA (our kernels rather than cudnnAddTensor /
 * cudnnConvolutionBackwardBias, which do not take every dtype): y[n][o][..] += b[o] and
 * db[o] += scale * sum over n and the plane of dy[n][o][..], summed in double. y and dy are
 * NCHW-contiguous or channels-last. */
#include "nn_common.cuh"

/* y packed (NCHW-contiguous or channels-last): element i's channel is (i / cs) % O, cs the
 * channel stride (H*W or 1) */
template <class T> __global__ void nnk_bias_add(T *y, const T *b, int64_t O, int64_t cs, int64_t n) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    mtk_st(y + i, (CT)mtk_ld(y + i) + (CT)mtk_ld(b + (i / cs) % O));
}

/* grid (O, chunks): acc[o] += partial sums. dy packed: element (n, o, s) (s the flat plane
 * index) at n*sn + o*so + s*ss: NCHW (O*S, S, 1) or channels-last (S*O, 1, O). */
template <class T>
__global__ void nnk_bias_sums(const T *dy, double *acc, int64_t S, int64_t M, int64_t sn, int64_t so, int64_t ss) {
  __shared__ double sh[32];
  int64_t o = blockIdx.x;
  double a = 0;
  for (int64_t j = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; j < M; j += (int64_t)gridDim.y * blockDim.x) {
    int64_t n = j / S, s = j - n * S;
    a += (double)mtk_ld(dy + n * sn + o * so + s * ss);
  }
  a = nnk_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc + o, a);
}

template <class T> __global__ void nnk_bias_acc(T *db, const double *acc, int64_t O, double scale) {
  typedef typename mtk_ct<T>::type CT;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < O; o += (int64_t)gridDim.x * blockDim.x)
    mtk_st(db + o, (CT)((double)mtk_ld(db + o) + scale * acc[o]));
}

#define OP "nn.SpatialConvolution"

/* whether a packed 4-d tensor is channels-last rather than NCHW-contiguous (cudnn_conv.c hands
 * these kernels one of the two; a tensor that is both, C or H*W being 1, counts as NCHW) */
static bool nnk_channels_last(const mt_tensor *t) { return !mt__is_contiguous(t); }

extern "C" mt_status mt__cuda_conv_bias_add(mt_tensor *y, const mt_tensor *b) {
  int64_t n = mt__numel(y), O = y->sizes[1], S = y->sizes[2] * y->sizes[3];
  if (n == 0) return MT_OK;
  int64_t cs = nnk_channels_last(y) ? 1 : S;
  cudaStream_t s = mt__cuda_stream(y->device);
  return nnk_dispatch_float(y->dtype, OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_bias_add<T><<<mtk_blocks(n, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(y), mtk_ptr<T>(b), O, cs, n);
    MT_CUDA_LAUNCH_CHECK(OP);
    return MT_OK;
  });
}

extern "C" mt_status mt__cuda_conv_bias_grad(mt_tensor *db, const mt_tensor *dy, double scale) {
  int64_t O = dy->sizes[1], S = dy->sizes[2] * dy->sizes[3], M = dy->sizes[0] * S;
  if (O == 0 || M == 0) return MT_OK;
  int cl = nnk_channels_last(dy);
  int64_t sn = O * S, so = cl ? 1 : S, ss = cl ? O : 1;
  int device = dy->device;
  cudaStream_t s = mt__cuda_stream(device);
  mtk_temp acc;
  MT_TRY(nnk_zeros(acc, device, s, O, OP));
  int64_t per = (M + NNK_THREADS * 4 - 1) / (NNK_THREADS * 4), want = (1024 + O - 1) / O;
  int64_t p = per < want ? per : want;
  dim3 grid((unsigned)O, (unsigned)(p < 1 ? 1 : p > 64 ? 64 : p));
  return nnk_dispatch_float(dy->dtype, OP, [&](auto tag) -> mt_status {
    using T = typename decltype(tag)::type;
    nnk_bias_sums<T><<<grid, NNK_THREADS, 0, s>>>(mtk_ptr<T>(dy), acc.as<double>(), S, M, sn, so, ss);
    MT_CUDA_LAUNCH_CHECK(OP);
    nnk_bias_acc<T><<<mtk_blocks(O, NNK_THREADS), NNK_THREADS, 0, s>>>(mtk_ptr<T>(db), acc.as<double>(), O, scale);
    MT_CUDA_LAUNCH_CHECK(OP);
    return MT_OK;
  });
}
