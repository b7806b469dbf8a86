/* cudnn_common.c: per-device cuDNN handles and the convolution algorithm cache. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "cudnn_common.h"

typedef struct cache_entry {
  mt__cudnn_conv_key key;
  mt__cudnn_conv_algo algo;
  int used;
} cache_entry;

typedef struct handle_state {
  pthread_mutex_t mu;
  cudnnHandle_t handle;
  int ready;
  cache_entry *table; /* open addressing, linear probing; cap a power of two */
  size_t cap, count;
} handle_state;

static handle_state states[MT_CUDA_MAX_DEVICES];
static pthread_once_t states_once = PTHREAD_ONCE_INIT;

static void init_states(void) {
  for (int i = 0; i < MT_CUDA_MAX_DEVICES; i++) pthread_mutex_init(&states[i].mu, NULL);
}

mt_status mt__cudnn_error(cudnnStatus_t st, const char *op, const char *file, int line) {
  const char *base = file ? strrchr(file, '/') : NULL;
  base = base ? base + 1 : (file ? file : "?");
  mt_status code = st == CUDNN_STATUS_ALLOC_FAILED ? MT_ERR_MEMORY : MT_ERR_CUDA;
  return mt__error(code, "%s: cuDNN error %s (%s:%d)", op, cudnnGetErrorString(st), base, line);
}

mt_status mt__cudnn_acquire(int device, cudnnHandle_t *out, const char *op) {
  cudaStream_t stream;
  if (device < 0 || device >= MT_CUDA_MAX_DEVICES)
    return mt__error(MT_ERR_DEVICE, "%s: bad CUDA device %d", op, device);
  MT_TRY(mt__cuda_get_stream(device, &stream, op));
  pthread_once(&states_once, init_states);
  handle_state *h = &states[device];
  pthread_mutex_lock(&h->mu);
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  if (!h->ready) {
    st = cudnnCreate(&h->handle);
    if (st == CUDNN_STATUS_SUCCESS) h->ready = 1;
  }
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnSetStream(h->handle, stream);
  if (st != CUDNN_STATUS_SUCCESS) {
    pthread_mutex_unlock(&h->mu);
    return mt__cudnn_error(st, op, __FILE__, __LINE__);
  }
  *out = h->handle;
  return MT_OK;
}

void mt__cudnn_release(int device) { pthread_mutex_unlock(&states[device].mu); }

int mt__cudnn_dtype(int dtype, cudnnDataType_t *out) {
  switch (dtype) {
    case MT_F32: *out = CUDNN_DATA_FLOAT; return 0;
    case MT_F64: *out = CUDNN_DATA_DOUBLE; return 0;
    case MT_F16: *out = CUDNN_DATA_HALF; return 0;
    case MT_BF16: *out = CUDNN_DATA_BFLOAT16; return 0;
    default: return -1;
  }
}

/* FNV-1a over the key's ints (the key has no padding: all ints) */
static size_t key_hash(const mt__cudnn_conv_key *k) {
  const int *p = (const int *)k;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof *k / sizeof(int); i++) {
    h ^= (uint32_t)p[i];
    h *= 1099511628211ull;
  }
  return (size_t)h;
}

static cache_entry *find_slot(cache_entry *table, size_t cap, const mt__cudnn_conv_key *key) {
  size_t i = key_hash(key) & (cap - 1);
  while (table[i].used && memcmp(&table[i].key, key, sizeof *key) != 0) i = (i + 1) & (cap - 1);
  return &table[i];
}

int mt__cudnn_cache_get(int device, const mt__cudnn_conv_key *key, mt__cudnn_conv_algo *out) {
  handle_state *h = &states[device];
  if (!h->table) return 0;
  cache_entry *e = find_slot(h->table, h->cap, key);
  if (!e->used) return 0;
  *out = e->algo;
  return 1;
}

mt_status mt__cudnn_cache_put(int device, const mt__cudnn_conv_key *key, const mt__cudnn_conv_algo *algo) {
  handle_state *h = &states[device];
  if (2 * (h->count + 1) > h->cap) { /* keep the load under one half */
    size_t cap = h->cap ? 2 * h->cap : 64;
    cache_entry *t = calloc(cap, sizeof *t);
    if (!t) return mt__error(MT_ERR_MEMORY, "cudnn: out of memory for the algorithm cache");
    for (size_t i = 0; i < h->cap; i++)
      if (h->table[i].used) *find_slot(t, cap, &h->table[i].key) = h->table[i];
    free(h->table);
    h->table = t;
    h->cap = cap;
  }
  cache_entry *e = find_slot(h->table, h->cap, key);
  if (!e->used) h->count++;
  e->key = *key;
  e->algo = *algo;
  e->used = 1;
  return MT_OK;
}
