#define _GNU_SOURCE /* strdup, pread */
/* loader.c: decode threads fill whole batches ahead of the trainer.
 *
 * Order. Epoch e visits a permutation of all n samples drawn from (seed, e) by Fisher-Yates
 * on Philox draws, so every rank computes the same permutation without talking. Global batch
 * k is positions [k*G, (k+1)*G) of it with G = world * batch_size, and rank r takes the r-th
 * of `world` near-equal slices of that range: all ranks have the same number of batches, and
 * world ranks with batch B see exactly the samples one rank with batch world*B would. The last
 * global batch may be short (split as evenly as possible); nothing is padded or repeated.
 * Partitioned mode walks the same permutation restricted to the rank's own block (the one
 * mt_dataset_cache holds), with as many batches as the largest block needs.
 *
 * Work. A ring of `prefetch` slots holds the batches [consumed, filled); workers take one
 * sample at a time from the oldest slot with work left, decode and transform it straight into
 * the slot's tensor, and the trainer's next() waits only for the oldest slot. Each sample's
 * augmentation depends on (seed, epoch, sample id) alone, never on which thread ran it.
 * Restarting an epoch bumps a generation counter and waits for samples in flight, whose
 * results are then dropped. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/error.h"
#include "../core/philox.h"
#include "dataset.h"

#define OP "loader"
#define MAX_THREADS 256

typedef struct slot {
  int64_t batch;       /* batch index, -1: free */
  int64_t start, size; /* positions [start, start + size) of the epoch's order */
  int64_t next_pos, pending;
  mt_tensor *input, *target;
  uint8_t *bad; /* per position: skipped */
  int failed;
  mt_status status;
  char message[600];
} slot;

struct mt_loader {
  mt_dataset *d;
  mt_transform t;
  mt_loader_opts o;
  size_t sample_bytes;
  uint64_t perm_seed, aug_seed;
  /* epoch */
  int64_t epoch, nbatches;
  int64_t *order; /* this epoch's sample ids, as walked (see batch_range) */
  int64_t norder;
  int64_t consumed, filled; /* slots hold batches [consumed, filled) */
  uint64_t gen;
  int64_t inflight;
  slot *slots;
  int nslots;
  /* threads */
  pthread_t tid[MAX_THREADS];
  int nthreads, stop;
  pthread_mutex_t lock;
  pthread_cond_t work_cv, done_cv;
  /* skipped-sample messages, oldest first */
  char **errs;
  int nerrs, errs_cap;
  char *taken;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64: independent Philox keys for the permutation and the augmentation from one seed */
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static int64_t div_ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t count_batches(const mt_loader *l) {
  int64_t n = l->d->n, B = l->o.batch_size, W = l->o.world;
  if (l->o.partitioned) {
    int64_t big = div_ceil(n, W), small = n / W;
    return l->o.drop_last ? small / B : div_ceil(big, B);
  }
  return l->o.drop_last ? n / (B * W) : div_ceil(n, B * W);
}

/* positions of batch k in the order */
static void batch_range(const mt_loader *l, int64_t k, int64_t *start, int64_t *size) {
  int64_t B = l->o.batch_size;
  if (l->o.partitioned) {
    int64_t s = k * B;
    *start = s < l->norder ? s : l->norder;
    *size = (s + B < l->norder ? s + B : l->norder) - *start;
    return;
  }
  int64_t G = B * l->o.world, gs = k * G;
  int64_t g = (gs + G < l->norder ? gs + G : l->norder) - gs;
  int64_t a = gs + g * l->o.rank / l->o.world, b = gs + g * (l->o.rank + 1) / l->o.world;
  *start = a;
  *size = b - a;
}

static mt_status make_order(mt_loader *l, int64_t epoch) {
  int64_t n = l->d->n;
  int64_t *perm = malloc((size_t)(n > 0 ? n : 1) * sizeof *perm);
  if (!perm) return mt__error(MT_ERR_MEMORY, OP ": out of host memory for a permutation of %lld samples", (long long)n);
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  if (l->o.shuffle) {
    uint64_t base = (uint64_t)epoch << 40;
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = (int64_t)(mt_philox_uniform(l->perm_seed, base + (uint64_t)i) * (double)(i + 1));
      if (j > i) j = i;
      int64_t tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
    }
  }
  int64_t m = n;
  if (l->o.partitioned) { /* keep the permutation's order, restricted to this rank's block */
    int64_t lo, hi;
    mt__dataset_block(n, l->o.rank, l->o.world, &lo, &hi);
    m = 0;
    for (int64_t i = 0; i < n; i++)
      if (perm[i] >= lo && perm[i] < hi) perm[m++] = perm[i];
  }
  free(l->order);
  l->order = perm;
  l->norder = m;
  return MT_OK;
}

/* ---- slots ---- */
static void slot_clear(slot *s) {
  if (s->input) mt_tensor_release(s->input);
  if (s->target) mt_tensor_release(s->target);
  s->input = s->target = NULL;
  s->batch = -1;
  s->size = s->next_pos = s->pending = 0;
  s->failed = 0;
}

/* Allocate batch k's tensors and fill its targets; called by the trainer's thread without the
 * lock (the slot is invisible to workers until filled is advanced). */
static mt_status slot_prepare(mt_loader *l, slot *s, int64_t k) {
  int64_t start, size;
  batch_range(l, k, &start, &size);
  int64_t in_sz[4] = {size, 3, l->t.out_h, l->t.out_w};
  if (l->t.nhwc) {
    in_sz[1] = l->t.out_h;
    in_sz[2] = l->t.out_w;
    in_sz[3] = 3;
  }
  mt_status st = l->o.pinned ? mt_tensor_new_pinned(&s->input, l->t.dtype, 4, in_sz)
                             : mt_tensor_new(&s->input, l->t.dtype, -1, 4, in_sz);
  if (st != MT_OK) return st;
  st = l->o.pinned ? mt_tensor_new_pinned(&s->target, MT_I64, 1, &size)
                   : mt_tensor_new(&s->target, MT_I64, -1, 1, &size);
  if (st != MT_OK) {
    slot_clear(s);
    return st;
  }
  int64_t *tg = mt_tensor_data(s->target);
  for (int64_t p = 0; p < size; p++) tg[p] = (int64_t)l->d->samples[l->order[start + p]].label + 1;
  memset(s->bad, 0, (size_t)l->o.batch_size);
  s->batch = k;
  s->start = start;
  s->size = size;
  s->next_pos = 0;
  s->pending = size;
  s->failed = 0;
  return MT_OK;
}

/* open slots for batches up to consumed + nslots; the lock is taken around publishing only */
static mt_status refill(mt_loader *l) {
  for (;;) {
    pthread_mutex_lock(&l->lock);
    int64_t k = l->filled;
    int open = k < l->nbatches && k < l->consumed + l->nslots;
    pthread_mutex_unlock(&l->lock);
    if (!open) return MT_OK;
    slot *s = &l->slots[k % l->nslots];
    MT_TRY(slot_prepare(l, s, k));
    pthread_mutex_lock(&l->lock);
    l->filled = k + 1;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->lock);
  }
}

static void push_error(mt_loader *l, const char *msg) { /* lock held */
  if (l->nerrs == l->errs_cap) {
    int cap = l->errs_cap ? 2 * l->errs_cap : 16;
    char **e = realloc(l->errs, (size_t)cap * sizeof *e);
    if (!e) return; /* the skip is still counted in the batch info */
    l->errs = e;
    l->errs_cap = cap;
  }
  char *c = strdup(msg);
  if (c) l->errs[l->nerrs++] = c;
}

/* ---- workers ---- */
static void *worker_main(void *arg) {
  mt_loader *l = arg;
  uint8_t *buf = NULL;
  size_t cap = 0;
  void *scratch = NULL;
  pthread_mutex_lock(&l->lock);
  while (!l->stop) {
    slot *s = NULL;
    for (int64_t k = l->consumed; k < l->filled; k++) {
      slot *c = &l->slots[k % l->nslots];
      if (c->next_pos < c->size) {
        s = c;
        break;
      }
    }
    if (!s) {
      pthread_cond_wait(&l->work_cv, &l->lock);
      continue;
    }
    int64_t pos = s->next_pos++;
    int64_t id = l->order[s->start + pos];
    uint8_t *dst = (uint8_t *)mt_tensor_data(s->input) + (size_t)pos * l->sample_bytes;
    uint64_t gen = l->gen, counter = ((uint64_t)l->epoch << 40) | (uint64_t)id;
    l->inflight++;
    pthread_mutex_unlock(&l->lock);

    const mt__sample *smp = &l->d->samples[id];
    const uint8_t *bytes;
    size_t len;
    mt_status st = mt__dataset_bytes(l->d, id, &buf, &cap, &bytes, &len);
    if (st == MT_OK) st = mt_transform_apply(&l->t, bytes, len, smp->name, l->aug_seed, counter, dst, &scratch);
    char msg[600];
    if (st != MT_OK) snprintf(msg, sizeof msg, "%s", mt_last_error());

    pthread_mutex_lock(&l->lock);
    l->inflight--;
    if (gen == l->gen) {
      if (st != MT_OK) {
        if (l->o.skip_bad) {
          s->bad[pos] = 1;
          push_error(l, msg);
        } else if (!s->failed) {
          s->failed = 1;
          s->status = st;
          snprintf(s->message, sizeof s->message, "%s", msg);
        }
      }
      s->pending--;
    }
    pthread_cond_broadcast(&l->done_cv);
  }
  pthread_mutex_unlock(&l->lock);
  free(buf);
  mt_transform_scratch_free(scratch);
  return NULL;
}

/* ---- public ---- */
mt_status mt_loader_new(mt_loader **out, mt_dataset *d, const mt_transform *t, const mt_loader_opts *o) {
  if (!out || !d || !t || !o) return mt__error(MT_ERR_ARG, OP ": NULL argument");
  *out = NULL;
  if (o->batch_size < 1) return mt__error(MT_ERR_ARG, OP ": batch size must be >= 1, got %d", o->batch_size);
  if (o->threads < 1 || o->threads > MAX_THREADS)
    return mt__error(MT_ERR_ARG, OP ": threads must be in [1, %d], got %d", MAX_THREADS, o->threads);
  if (o->prefetch < 1 || o->prefetch > 64)
    return mt__error(MT_ERR_ARG, OP ": prefetch must be in [1, 64], got %d", o->prefetch);
  if (o->world < 1 || o->rank < 0 || o->rank >= o->world)
    return mt__error(MT_ERR_ARG, OP ": rank %d is not in [0, world = %d)", o->rank, o->world);
  if (t->dtype != MT_U8 && t->dtype != MT_F32 && t->dtype != MT_F16)
    return mt__error(MT_ERR_DTYPE, OP ": the transform's output dtype must be uint8, float32 or float16, got %s",
                     mt_dtype_name(t->dtype));
  if (t->out_w < 1 || t->out_h < 1 || t->out_w > 16384 || t->out_h > 16384)
    return mt__error(MT_ERR_ARG, OP ": output size %dx%d is out of range", t->out_w, t->out_h);
  if (d->n == 0) return mt__error(MT_ERR_ARG, OP ": the dataset is empty");
  mt_loader *l = calloc(1, sizeof *l);
  if (!l) return mt__error(MT_ERR_MEMORY, OP ": out of host memory");
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->work_cv, NULL);
  pthread_cond_init(&l->done_cv, NULL);
  l->d = d;
  l->t = *t;
  l->o = *o;
  l->sample_bytes = (size_t)t->out_w * (size_t)t->out_h * 3 * mt_dtype_size(t->dtype);
  l->perm_seed = mix(o->seed ^ 0x7065726dull);
  l->aug_seed = mix(o->seed ^ 0x61756700ull);
  l->nbatches = count_batches(l);
  l->nslots = o->prefetch + 1; /* one being handed out while `prefetch` fill */
  l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
  int ok = l->slots != NULL;
  for (int i = 0; ok && i < l->nslots; i++) {
    l->slots[i].batch = -1;
    ok = (l->slots[i].bad = malloc((size_t)o->batch_size)) != NULL;
  }
  if (!ok) {
    mt_loader_free(l);
    return mt__error(MT_ERR_MEMORY, OP ": out of host memory for %d batch slots", l->nslots);
  }
  for (int i = 0; i < o->threads; i++) {
    if (pthread_create(&l->tid[i], NULL, worker_main, l) != 0) {
      mt_loader_free(l);
      return mt__error(MT_ERR_INTERNAL, OP ": could not start decode thread %d of %d", i + 1, o->threads);
    }
    l->nthreads++;
  }
  *out = l;
  return MT_OK;
}

/* stop handing out work for the current epoch and wait for samples in flight (lock held) */
static void quiesce(mt_loader *l) {
  l->gen++;
  l->filled = l->consumed; /* no slot is visible to workers any more */
  while (l->inflight > 0) pthread_cond_wait(&l->done_cv, &l->lock);
  for (int i = 0; i < l->nslots; i++) slot_clear(&l->slots[i]);
}

void mt_loader_free(mt_loader *l) {
  if (!l) return;
  if (l->nthreads > 0) {
    pthread_mutex_lock(&l->lock);
    quiesce(l);
    l->stop = 1;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->lock);
    for (int i = 0; i < l->nthreads; i++) pthread_join(l->tid[i], NULL);
  }
  if (l->slots) {
    for (int i = 0; i < l->nslots; i++) {
      slot_clear(&l->slots[i]);
      free(l->slots[i].bad);
    }
    free(l->slots);
  }
  pthread_mutex_destroy(&l->lock);
  pthread_cond_destroy(&l->work_cv);
  pthread_cond_destroy(&l->done_cv);
  for (int i = 0; i < l->nerrs; i++) free(l->errs[i]);
  free(l->errs);
  free(l->taken);
  free(l->order);
  free(l);
}

mt_status mt_loader_start(mt_loader *l, int64_t epoch, int64_t first) {
  if (!l) return mt__error(MT_ERR_ARG, OP ": loader is NULL");
  if (epoch < 1 || epoch >= (1 << 20))
    return mt__error(MT_ERR_ARG, OP ": epoch must be in [1, 2^20), got %lld", (long long)epoch);
  if (first < 0 || first > l->nbatches)
    return mt__error(MT_ERR_INDEX, OP ": first batch %lld is not in [0, %lld]", (long long)first,
                     (long long)l->nbatches);
  pthread_mutex_lock(&l->lock);
  quiesce(l);
  l->consumed = l->filled = first;
  pthread_mutex_unlock(&l->lock);
  /* workers see no slot until refill publishes one, so the order can change unlocked */
  mt_status st = make_order(l, epoch);
  if (st != MT_OK) {
    l->nbatches = 0;
    return st;
  }
  l->epoch = epoch;
  l->nbatches = count_batches(l);
  return refill(l);
}

int64_t mt_loader_nbatches(const mt_loader *l) { return l ? count_batches(l) : 0; }

mt_status mt_loader_next(mt_loader *l, mt_tensor **input, mt_tensor **target, mt_batch_info *info) {
  if (!l || !input || !target) return mt__error(MT_ERR_ARG, OP ": NULL argument");
  *input = *target = NULL;
  if (!l->order) return mt__error(MT_ERR_ARG, OP ": next() before start()");
  pthread_mutex_lock(&l->lock);
  int64_t k = l->consumed;
  if (info) {
    memset(info, 0, sizeof *info);
    info->epoch = l->epoch;
    info->index = k;
    info->nbatches = l->nbatches;
  }
  if (k >= l->nbatches || k >= l->filled) { /* end of epoch (or a refill that failed) */
    pthread_mutex_unlock(&l->lock);
    if (k < l->nbatches) return mt__error(MT_ERR_INTERNAL, OP ": batch %lld was never scheduled", (long long)k);
    return MT_OK;
  }
  slot *s = &l->slots[k % l->nslots];
  double t0 = now_seconds();
  while (s->pending > 0) pthread_cond_wait(&l->done_cv, &l->lock);
  double waited = now_seconds() - t0;
  mt_tensor *in = s->input, *tg = s->target;
  int64_t size = s->size;
  int failed = s->failed;
  mt_status fst = s->status;
  char fmsg[600];
  if (failed) snprintf(fmsg, sizeof fmsg, "%s", s->message);
  /* compact past skipped samples: the batch shrinks, the dataset does not silently change */
  int64_t kept = 0;
  uint8_t *px = mt_tensor_data(in);
  int64_t *lab = mt_tensor_data(tg);
  for (int64_t p = 0; p < size; p++) {
    if (s->bad[p]) continue;
    if (kept != p) {
      memmove(px + (size_t)kept * l->sample_bytes, px + (size_t)p * l->sample_bytes, l->sample_bytes);
      lab[kept] = lab[p];
    }
    kept++;
  }
  s->input = s->target = NULL;
  slot_clear(s);
  l->consumed = k + 1;
  pthread_mutex_unlock(&l->lock);

  mt_status st = refill(l);
  if (failed || st != MT_OK) {
    mt_tensor_release(in);
    mt_tensor_release(tg);
    if (failed)
      return mt__error(fst, "%s (batch %lld of epoch %lld; skipBad is off)", fmsg, (long long)k + 1,
                       (long long)l->epoch);
    return st;
  }
  if (kept != size) {
    int64_t sz[4];
    for (int i = 0; i < 4; i++) sz[i] = mt_tensor_size(in, i);
    sz[0] = kept;
    mt_status rs = mt_tensor_resize(in, 4, sz);
    if (rs == MT_OK) rs = mt_tensor_resize(tg, 1, &kept);
    if (rs != MT_OK) {
      mt_tensor_release(in);
      mt_tensor_release(tg);
      return rs;
    }
  }
  *input = in;
  *target = tg;
  if (info) {
    info->count = kept;
    info->skipped = size - kept;
    info->wait_seconds = waited;
  }
  return MT_OK;
}

const char *mt_loader_take_error(mt_loader *l) {
  if (!l) return NULL;
  free(l->taken);
  l->taken = NULL;
  pthread_mutex_lock(&l->lock);
  if (l->nerrs > 0) {
    l->taken = l->errs[0];
    memmove(l->errs, l->errs + 1, (size_t)(l->nerrs - 1) * sizeof *l->errs);
    l->nerrs--;
  }
  pthread_mutex_unlock(&l->lock);
  return l->taken;
}
