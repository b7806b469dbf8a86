/* device.c: CUDA devices: how many there are, one stream per device, a pool of events,
 * synchronisation, and turning CUDA errors into moontorch errors.
 *
 * A machine without a GPU or without a driver must still load and run the library on the
 * CPU: the device count is then 0 and every CUDA request fails with a clear message. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_common.h"

/* ---- device count (asked once: it can be slow and never changes while we run) ---- */

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count;

static void count_devices(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    n = 0;
    /* No driver or no device: clear the error so it does not surface in a later call. */
    (void)cudaGetLastError();
  }
  if (n > MT_CUDA_MAX_DEVICES) n = MT_CUDA_MAX_DEVICES;
  device_count = n;
}

int mt_cuda_is_compiled(void) { return 1; }

int mt_cuda_device_count(void) {
  pthread_once(&count_once, count_devices);
  return device_count;
}

static mt_status check_device(int device, const char *op) {
  int n = mt_cuda_device_count();
  if (n == 0) return mt__error(MT_ERR_CUDA, "%s: no CUDA device is available", op);
  if (device < 0 || device >= n)
    return mt__error(MT_ERR_DEVICE, "%s: CUDA device %d requested but only %d present (0..%d)", op, device, n, n - 1);
  return MT_OK;
}

/* ---- errors ---- */

mt_status mt__cuda_error(cudaError_t err, const char *op, const char *file, int line) {
  /* Non-sticky errors stay in the runtime's per-thread slot; clear it so the next call does not
   * report it again. (A sticky error, e.g. a kernel fault, keeps failing every call.) */
  (void)cudaGetLastError();
  const char *base = file ? strrchr(file, '/') : NULL;
  base = base ? base + 1 : (file ? file : "?");
  mt_status st = err == cudaErrorMemoryAllocation ? MT_ERR_MEMORY : MT_ERR_CUDA;
  return mt__error(st, "%s: CUDA error %s: %s (%s:%d)", op, cudaGetErrorName(err), cudaGetErrorString(err), base, line);
}

/* ---- per-device state: the stream and the event pool ---- */

typedef struct devinfo {
  pthread_mutex_t mu;
  cudaStream_t stream;
  int stream_ready;
  cudaEvent_t *events; /* free events */
  int nevents, cap;
} devinfo;

static devinfo devs[MT_CUDA_MAX_DEVICES];
static pthread_once_t devs_once = PTHREAD_ONCE_INIT;

static void init_devs(void) {
  for (int i = 0; i < MT_CUDA_MAX_DEVICES; i++) pthread_mutex_init(&devs[i].mu, NULL);
}

mt_status mt__cuda_set_device(int device, const char *op) {
  MT_TRY(check_device(device, op));
  MT_CUDA_TRY(cudaSetDevice(device), op);
  return MT_OK;
}

mt_status mt__cuda_get_stream(int device, cudaStream_t *out, const char *op) {
  MT_TRY(mt__cuda_set_device(device, op));
  pthread_once(&devs_once, init_devs);
  devinfo *d = &devs[device];
  /* The flag is written once under the lock; the unlocked read is the common fast path. */
  if (!__atomic_load_n(&d->stream_ready, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&d->mu);
    if (!d->stream_ready) {
      /* Non-blocking: it must not serialise with the legacy default stream other libraries use. */
      cudaError_t e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
      if (e != cudaSuccess) {
        pthread_mutex_unlock(&d->mu);
        return mt__cuda_error(e, op, __FILE__, __LINE__);
      }
      __atomic_store_n(&d->stream_ready, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&d->mu);
  }
  *out = d->stream;
  return MT_OK;
}

cudaStream_t mt__cuda_stream(int device) {
  cudaStream_t s = NULL;
  /* On failure the error is set; the legacy default stream keeps a caller correct (if slow)
   * and its next CUDA call reports the underlying problem. */
  if (mt__cuda_get_stream(device, &s, "cuda stream") != MT_OK) return NULL;
  return s;
}

mt_status mt__cuda_event_get(int device, cudaEvent_t *ev) {
  MT_TRY(mt__cuda_set_device(device, "event"));
  pthread_once(&devs_once, init_devs);
  devinfo *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  if (d->nevents > 0) {
    *ev = d->events[--d->nevents];
    pthread_mutex_unlock(&d->mu);
    return MT_OK;
  }
  pthread_mutex_unlock(&d->mu);
  MT_CUDA_TRY(cudaEventCreateWithFlags(ev, cudaEventDisableTiming), "event");
  return MT_OK;
}

void mt__cuda_event_put(int device, cudaEvent_t ev) {
  if (device < 0 || device >= MT_CUDA_MAX_DEVICES || !ev) return;
  pthread_once(&devs_once, init_devs);
  devinfo *d = &devs[device];
  pthread_mutex_lock(&d->mu);
  if (d->nevents == d->cap) {
    int cap = d->cap ? 2 * d->cap : 64;
    cudaEvent_t *p = realloc(d->events, (size_t)cap * sizeof *p);
    if (!p) { /* keep going without pooling this one */
      pthread_mutex_unlock(&d->mu);
      cudaEventDestroy(ev);
      return;
    }
    d->events = p;
    d->cap = cap;
  }
  d->events[d->nevents++] = ev;
  pthread_mutex_unlock(&d->mu);
}

/* ---- public entry points ---- */

static mt_status sync_one(int device) {
  cudaStream_t s;
  MT_TRY(mt__cuda_get_stream(device, &s, "cuda.synchronize"));
  MT_CUDA_TRY(cudaStreamSynchronize(s), "cuda.synchronize");
  return MT_OK;
}

mt_status mt_cuda_synchronize(int device) {
  if (device >= 0) return sync_one(device);
  int n = mt_cuda_device_count();
  if (n == 0) return check_device(0, "cuda.synchronize");
  pthread_once(&devs_once, init_devs);
  for (int i = 0; i < n; i++)
    if (__atomic_load_n(&devs[i].stream_ready, __ATOMIC_ACQUIRE)) MT_TRY(sync_one(i));
  return MT_OK;
}

mt_status mt_cuda_stream(int device, void **out) {
  if (!out) return mt__error(MT_ERR_ARG, "cuda.stream: out is NULL");
  cudaStream_t s;
  MT_TRY(mt__cuda_get_stream(device, &s, "cuda.stream"));
  *out = (void *)s;
  return MT_OK;
}

mt_status mt_cuda_empty_cache(int device) {
  if (device >= 0) {
    MT_TRY(check_device(device, "cuda.emptyCache"));
  } else if (mt_cuda_device_count() == 0) {
    return check_device(0, "cuda.emptyCache");
  }
  MT_TRY(mt__cuda_release_cached(device));
  if (device < 0) mt__cuda_host_release_cached();
  return MT_OK;
}

mt_status mt_cuda_device_name(int device, char *buf, int len) {
  MT_TRY(check_device(device, "cuda.deviceName"));
  if (!buf || len <= 0) return mt__error(MT_ERR_ARG, "cuda.deviceName: buffer is NULL or empty");
  struct cudaDeviceProp prop;
  MT_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cuda.deviceName");
  size_t n = 0;
  while (n < sizeof prop.name && prop.name[n]) n++;
  if (n >= (size_t)len) n = (size_t)len - 1;
  memcpy(buf, prop.name, n);
  buf[n] = 0;
  return MT_OK;
}
