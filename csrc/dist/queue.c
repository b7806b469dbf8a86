/* queue.c: the communication thread. Every collective of a multi-rank communicator becomes a
 * work item on one FIFO and runs there in issue order, which is what keeps ranks in step
 * (every rank issues the same collectives in the same order) and what lets a caller go on
 * computing while a bucket of gradients is reduced. With one rank the work runs in the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "queue.h"

mt_status mt__dist_start_watchdog(mt_dist *d); /* wait.c */

static void release_tensors(mt_dist_work *w) {
  if (w->a) mt_tensor_release(w->a);
  if (w->b) mt_tensor_release(w->b);
  if (w->c) mt_tensor_release(w->c);
  w->a = w->b = w->c = NULL;
}

static void *loop(void *arg) {
  mt_dist *d = arg;
  for (;;) {
    pthread_mutex_lock(&d->mu);
    while (!d->head && !d->stopping) pthread_cond_wait(&d->cv, &d->mu);
    mt_dist_work *w = d->head;
    if (!w) { /* stopping with an empty queue */
      pthread_mutex_unlock(&d->mu);
      return NULL;
    }
    d->head = w->next;
    if (!d->head) d->tail = NULL;
    pthread_mutex_unlock(&d->mu);

    pthread_mutex_lock(&d->mu);
    d->running = w;
    pthread_mutex_unlock(&d->mu);
    mt_status st = mt__dist_execute(d, w);
    char msg[sizeof w->msg];
    if (st != MT_OK) snprintf(msg, sizeof msg, "%s", mt_last_error());
    mt__dist_set_current(d, "idle (between collectives)");

    pthread_mutex_lock(&d->mu);
    d->running = NULL;
    if (w->abandoned) { /* the watchdog completed it with its error long ago: free it if the owner has let go */
      w->returned = 1;
      int last = w->owner_gone;
      pthread_mutex_unlock(&d->mu);
      if (last) {
        release_tensors(w);
        free(w);
      }
      continue;
    }
    w->st = st;
    if (st != MT_OK) memcpy(w->msg, msg, sizeof msg);
    w->done = 1;
    pthread_cond_broadcast(&d->done_cv);
    pthread_mutex_unlock(&d->mu);
  }
}

mt_status mt__dist_start_thread(mt_dist *d) {
  mt__dist_set_current(d, "idle (between collectives)");
  if (pthread_create(&d->thread, NULL, loop, d) != 0)
    return mt__error(MT_ERR_INTERNAL, "dist.init: cannot start the communication thread");
  d->thread_started = 1;
#ifdef MT_WITH_MPI
  if (d->launched) return mt__dist_start_watchdog(d);
#endif
  return MT_OK;
}

void mt__dist_stop_thread(mt_dist *d, int join) {
  if (!d->thread_started) return;
  pthread_mutex_lock(&d->mu);
  d->stopping = 1;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
  if (join) pthread_join(d->thread, NULL);
  else pthread_detach(d->thread);
  if (d->watchdog_started) {
    if (join) pthread_join(d->watchdog, NULL);
    else pthread_detach(d->watchdog);
    d->watchdog_started = 0;
  }
  d->thread_started = 0;
}

mt_status mt__dist_submit(mt_dist *d, mt_dist_work *w, mt_dist_work **out) {
  w->d = d;
  w->seq = w->kind == MT_WORK_PS ? 0 : ++d->seq; /* parameter server requests are not collective */
  if (w->a) mt_tensor_retain(w->a);
  if (w->b) mt_tensor_retain(w->b);
  if (w->c) mt_tensor_retain(w->c);
  if (!d->thread_started) {
    if (d->size > 1) { /* finalized, or the thread was stopped by a failure */
      release_tensors(w);
      free(w);
      return mt__error(MT_ERR_DIST, "dist: the communicator is %s", d->finalized ? "finalized" : "shut down");
    }
    mt__dist_run(d, w);
    w->done = 1;
  } else {
    pthread_mutex_lock(&d->mu);
    if (d->tail) d->tail->next = w;
    else d->head = w;
    d->tail = w;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
  }
  if (out) {
    *out = w;
    return MT_OK;
  }
  mt_status st = mt_dist_work_wait(w);
  char msg[sizeof w->msg];
  memcpy(msg, w->msg, sizeof msg);
  mt_dist_work_free(w);
  return st == MT_OK ? MT_OK : mt__error(st, "%s", msg);
}

mt_status mt_dist_work_wait(mt_dist_work *w) {
  if (!w) return mt__error(MT_ERR_ARG, "dist.wait: handle is NULL");
  mt_dist *d = w->d;
  pthread_mutex_lock(&d->mu);
  while (!w->done) pthread_cond_wait(&d->done_cv, &d->mu);
  int keep = w->abandoned && !w->returned; /* MPI may still write into its tensors */
  pthread_mutex_unlock(&d->mu);
  if (!keep) release_tensors(w);
  return w->st == MT_OK ? MT_OK : mt__error(w->st, "%s", w->msg);
}

int mt_dist_work_test(mt_dist_work *w) {
  if (!w) return 1;
  pthread_mutex_lock(&w->d->mu);
  int done = w->done;
  pthread_mutex_unlock(&w->d->mu);
  return done;
}

void mt_dist_work_free(mt_dist_work *w) {
  if (!w) return;
  /* a handle dropped while queued must not be freed under the thread: wait first, unless the
   * thread is gone (a failed communicator at exit), then leak it */
  if (!w->done && !w->d->thread_started) return;
  if (!w->done) mt_dist_work_wait(w);
  mt_dist *d = w->d;
  pthread_mutex_lock(&d->mu);
  int later = w->abandoned && !w->returned; /* the communication thread frees it when MPI returns */
  if (later) w->owner_gone = 1;
  pthread_mutex_unlock(&d->mu);
  if (later) return;
  release_tensors(w);
  free(w);
}

void mt_dist_work_counters(const mt_dist_work *w, int64_t *out2) {
  out2[0] = w && w->done ? w->counters[0] : 0;
  out2[1] = w && w->done ? w->counters[1] : 0;
}
