/* copy.c: the CUDA backend's copy: device<->device (same or different devices) and
 * host<->device, any dtype pair, any strides (backend contract: same shape; one side may be on
 * the host).
 *
 * Strategy: bytes cross the bus once, in whichever layout needs no extra pass.
 *  - A "dense" tensor (its elements exactly fill a span of memory, in any dimension order:
 *    contiguous, transposed, permuted) moves as one raw span; the device then converts dtype
 *    and reorders with the strided copy kernel (kernels/copy.cu), which is far faster than
 *    doing it on the host.
 *  - A host tensor with gaps or repeats (narrowed, expanded) is first gathered on the host
 *    into a contiguous pinned buffer (CPU backend copy), in the destination dtype.
 *  - A host destination with gaps gets a contiguous buffer back from the device and the CPU
 *    scatters it.
 * Host->device copies from pinned memory are asynchronous on the device stream (an event
 * guards the buffer's reuse, see host_alloc.c); from pageable memory they are staged through a
 * pinned buffer, so the caller may reuse its memory as soon as we return. Device->host copies
 * synchronise: the caller reads the result next. */
#include <string.h>
#include "cuda_common.h"

/* Pageable sources up to this size are staged through pinned memory (async for the device);
 * larger ones are copied by the driver and waited for. */
#define STAGE_MAX ((size_t)32 << 20)

static const char *const OP = "copy";

static size_t esize(const mt_tensor *t) { return mt__dtype_size(t->dtype); }

/* Elements exactly fill numel consecutive slots from element 0 (positive strides, no gaps,
 * no overlaps), in any dimension order. */
static int is_dense(const mt_tensor *t) {
  int64_t sz[MT_MAX_DIMS], st[MT_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] == 1) continue;
    if (t->sizes[d] == 0) return 1;
    if (t->strides[d] <= 0) return 0;
    /* insertion sort by stride */
    int i = n++;
    while (i > 0 && st[i - 1] > t->strides[d]) {
      st[i] = st[i - 1];
      sz[i] = sz[i - 1];
      i--;
    }
    st[i] = t->strides[d];
    sz[i] = t->sizes[d];
  }
  int64_t expect = 1;
  for (int i = 0; i < n; i++) {
    if (st[i] != expect) return 0;
    expect *= sz[i];
  }
  return 1;
}

/* Same strides in every dimension that has more than one element. */
static int same_layout(const mt_tensor *a, const mt_tensor *b) {
  for (int d = 0; d < a->ndim; d++)
    if (a->sizes[d] > 1 && a->strides[d] != b->strides[d]) return 0;
  return 1;
}

/* Same dtype, both dense with the same layout: the copy is one transfer of the span's bytes. */
static int same_bytes(const mt_tensor *dst, const mt_tensor *src) {
  return dst->dtype == src->dtype && is_dense(src) && is_dense(dst) && same_layout(dst, src);
}

/* A fresh device buffer of `dtype` laid out exactly like the dense tensor `like`. */
static mt_status dense_like(mt_tensor **out, const mt_tensor *like, mt_dtype dtype, int device) {
  int64_t n = mt__numel(like);
  MT_TRY(mt__tensor_empty(out, dtype, device, 1, &n));
  (*out)->ndim = like->ndim;
  memcpy((*out)->sizes, like->sizes, sizeof like->sizes);
  memcpy((*out)->strides, like->strides, sizeof like->strides);
  return MT_OK;
}

/* A host buffer for staging: pinned when possible (async transfers), plain otherwise. */
static mt_status host_buffer(mt_tensor **out, mt_dtype dtype, int ndim, const int64_t *sizes) {
  if (mt_tensor_new_pinned(out, dtype, ndim, sizes) == MT_OK) return MT_OK;
  return mt__tensor_empty(out, dtype, MT_CPU, ndim, sizes);
}

/* bytes from host memory `src` (inside host tensor h's storage) to device memory `dst` */
static mt_status h2d_bytes(void *dst, const mt_tensor *h, const void *src, size_t bytes, int device, cudaStream_t s) {
  if (h->storage->pinned) {
    MT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), OP);
    mt__cuda_host_record(h->storage->data, device, s);
    return MT_OK;
  }
  void *stage = NULL;
  if (bytes <= STAGE_MAX && mt__cuda_host_alloc(bytes, &stage) == MT_OK) {
    memcpy(stage, src, bytes);
    cudaError_t e = cudaMemcpyAsync(dst, stage, bytes, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) mt__cuda_host_record(stage, device, s);
    mt__cuda_host_free(stage);
    if (e != cudaSuccess) return mt__cuda_error(e, OP, __FILE__, __LINE__);
    return MT_OK;
  }
  mt_clear_error(); /* a failed staging allocation is not the caller's error */
  MT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), OP);
  /* The source is pageable: return only once the driver no longer reads it. */
  MT_CUDA_TRY(cudaStreamSynchronize(s), OP);
  return MT_OK;
}

static mt_status d2h_bytes(void *dst, const void *src, size_t bytes, cudaStream_t s) {
  MT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), OP);
  MT_CUDA_TRY(cudaStreamSynchronize(s), OP);
  return MT_OK;
}

static mt_status host_to_device(mt_tensor *dst, const mt_tensor *src) {
  int dev = dst->device;
  int64_t n = mt__numel(dst);
  cudaStream_t s;
  MT_TRY(mt__cuda_get_stream(dev, &s, OP));
  if (same_bytes(dst, src)) return h2d_bytes(mt__data(dst), src, mt__data(src), (size_t)n * esize(src), dev, s);

  const mt_tensor *hsrc = src;
  mt_tensor *staged = NULL, *tmp = NULL;
  mt_status st = MT_OK;
  if (!is_dense(src)) {
    /* gaps or repeats: gather on the host, converting to the destination dtype on the way */
    MT_TRY(host_buffer(&staged, dst->dtype, dst->ndim, dst->sizes));
    st = mt__cpu_backend.copy(staged, src);
    if (st == MT_OK && mt__is_contiguous(dst)) {
      st = h2d_bytes(mt__data(dst), staged, mt__data(staged), (size_t)n * esize(dst), dev, s);
      mt_tensor_release(staged);
      return st;
    }
    hsrc = staged;
  }
  /* hsrc is dense: move its span as is, then convert/reorder on the device */
  if (st == MT_OK) st = dense_like(&tmp, hsrc, hsrc->dtype, dev);
  if (st == MT_OK) st = h2d_bytes(mt__data(tmp), hsrc, mt__data(hsrc), (size_t)n * esize(hsrc), dev, s);
  if (st == MT_OK) st = mt__cuda_convert(dst, tmp);
  mt_tensor_release(tmp); /* stream-ordered: the queued kernel finishes before any reuse */
  mt_tensor_release(staged);
  return st;
}

static mt_status device_to_host(mt_tensor *dst, const mt_tensor *src) {
  int dev = src->device;
  int64_t n = mt__numel(dst);
  cudaStream_t s;
  MT_TRY(mt__cuda_get_stream(dev, &s, OP));
  if (same_bytes(dst, src)) return d2h_bytes(mt__data(dst), mt__data(src), (size_t)n * esize(dst), s);

  mt_tensor *tmp = NULL, *host = NULL;
  mt_status st;
  if (is_dense(dst)) {
    /* build dst's exact layout and dtype on the device, then one raw transfer */
    st = dense_like(&tmp, dst, dst->dtype, dev);
    if (st == MT_OK) st = mt__cuda_convert(tmp, src);
    if (st == MT_OK) st = d2h_bytes(mt__data(dst), mt__data(tmp), (size_t)n * esize(dst), s);
    mt_tensor_release(tmp);
    return st;
  }
  /* dst has gaps: a contiguous copy comes back and the CPU scatters it */
  const mt_tensor *dsrc = src;
  st = MT_OK;
  if (!(src->dtype == dst->dtype && mt__is_contiguous(src))) {
    st = mt__tensor_empty(&tmp, dst->dtype, dev, dst->ndim, dst->sizes);
    if (st == MT_OK) st = mt__cuda_convert(tmp, src);
    dsrc = tmp;
  }
  if (st == MT_OK) st = host_buffer(&host, dst->dtype, dst->ndim, dst->sizes);
  if (st == MT_OK) st = d2h_bytes(mt__data(host), mt__data(dsrc), (size_t)n * esize(dst), s);
  if (st == MT_OK) st = mt__cpu_backend.copy(dst, host);
  mt_tensor_release(host);
  mt_tensor_release(tmp);
  return st;
}

static mt_status device_to_device(mt_tensor *dst, const mt_tensor *src) {
  int dev = dst->device;
  int64_t n = mt__numel(dst);
  if (same_bytes(dst, src)) {
    if (mt__data(dst) == mt__data(src)) return MT_OK; /* copying a tensor onto itself */
    cudaStream_t s;
    MT_TRY(mt__cuda_get_stream(dev, &s, OP));
    MT_CUDA_TRY(cudaMemcpyAsync(mt__data(dst), mt__data(src), (size_t)n * esize(dst), cudaMemcpyDeviceToDevice, s), OP);
    return MT_OK;
  }
  return mt__cuda_convert(dst, src);
}

/* Different devices: convert on the source device to a contiguous buffer of dst's dtype, move
 * it with a peer copy queued on the destination's stream, reorder there if needed. */
static mt_status across_devices(mt_tensor *dst, const mt_tensor *src) {
  int sdev = src->device, ddev = dst->device;
  int64_t n = mt__numel(dst);
  size_t bytes = (size_t)n * esize(dst);
  cudaStream_t ss, ds;
  MT_TRY(mt__cuda_get_stream(sdev, &ss, OP));
  MT_TRY(mt__cuda_get_stream(ddev, &ds, OP));
  mt_tensor *stmp = NULL, *dtmp = NULL;
  const mt_tensor *from = src;
  mt_status st = MT_OK;
  if (!(src->dtype == dst->dtype && mt__is_contiguous(src))) {
    st = mt__tensor_empty(&stmp, dst->dtype, sdev, src->ndim, src->sizes);
    if (st == MT_OK) st = mt__cuda_convert(stmp, src);
    from = stmp;
  }
  mt_tensor *to = dst;
  if (st == MT_OK && !mt__is_contiguous(dst)) {
    st = mt__tensor_empty(&dtmp, dst->dtype, ddev, dst->ndim, dst->sizes);
    to = dtmp;
  }
  cudaEvent_t ev = NULL, back = NULL;
  /* the destination stream waits for the source's pending work on `from` */
  if (st == MT_OK) st = mt__cuda_event_get(sdev, &ev);
  if (st == MT_OK) {
    cudaError_t e = cudaEventRecord(ev, ss);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(ds, ev, 0);
    if (e == cudaSuccess) e = cudaMemcpyPeerAsync(mt__data(to), ddev, mt__data(from), sdev, bytes, ds);
    if (e != cudaSuccess) st = mt__cuda_error(e, OP, __FILE__, __LINE__);
  }
  if (st == MT_OK) {
    /* `from` is read on another device's stream: keep its block from early reuse, and make the
     * source stream wait for the copy before anything it queues later overwrites `from`. */
    mt__cuda_record_stream(sdev, from->storage->data, ddev, ds);
    st = mt__cuda_event_get(ddev, &back);
    if (st == MT_OK) {
      cudaError_t e = cudaEventRecord(back, ds);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(ss, back, 0);
      if (e != cudaSuccess) st = mt__cuda_error(e, OP, __FILE__, __LINE__);
    }
  }
  if (st == MT_OK && dtmp) st = mt__cuda_convert(dst, dtmp);
  /* A wait captures the event's state when queued, so the events may be reused at once. */
  if (ev) mt__cuda_event_put(sdev, ev);
  if (back) mt__cuda_event_put(ddev, back);
  mt_tensor_release(stmp);
  mt_tensor_release(dtmp);
  return st;
}

mt_status mt__cuda_copy(mt_tensor *dst, const mt_tensor *src) {
  if (!dst || !src) return mt__error(MT_ERR_ARG, "%s: tensor is NULL", OP);
  if (dst->ndim != src->ndim) return mt__error(MT_ERR_SHAPE, "%s: internal: dimension counts differ", OP);
  for (int d = 0; d < dst->ndim; d++)
    if (dst->sizes[d] != src->sizes[d]) {
      char b1[128], b2[128];
      return mt__error(MT_ERR_SHAPE, "%s: sizes %s and %s differ", OP, mt__shape_str(dst, b1, sizeof b1),
                       mt__shape_str(src, b2, sizeof b2));
    }
  if (mt__numel(dst) == 0) return MT_OK;
  if (dst->device >= 0 && src->device >= 0)
    return dst->device == src->device ? device_to_device(dst, src) : across_devices(dst, src);
  if (dst->device >= 0) return host_to_device(dst, src);
  if (src->device >= 0) return device_to_host(dst, src);
  return mt__cpu_backend.copy(dst, src);
}
