/* wait.c: every wait of the distributed layer goes through here, so that none of them can hang:
 * it drives MPI's progress, watches the fault channel (a peer that failed says so), checks the
 * peers on this host for death every 100 ms, and gives up at the deadline with a message that
 * names the collective, the ranks it waited for, and the peers it found dead or stopped. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sched.h>
#include <time.h>
#include "queue.h"

#ifdef MT_WITH_MPI
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mt__dist_cancel(MPI_Request *reqs, int n) {
  for (int i = 0; i < n; i++) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&reqs[i]);
    MPI_Request_free(&reqs[i]);
  }
}

int mt__dist_world_rank(mt_dist *d, MPI_Comm comm, int r) {
  if (comm == d->world || d->world == MPI_COMM_NULL) return r;
  MPI_Group g, w;
  int out = MPI_UNDEFINED;
  if (MPI_Comm_group(comm, &g) != MPI_SUCCESS) return -1;
  if (MPI_Comm_group(d->world, &w) == MPI_SUCCESS) {
    MPI_Group_translate_ranks(g, 1, &r, w, &out);
    MPI_Group_free(&w);
  }
  MPI_Group_free(&g);
  return out == MPI_UNDEFINED ? -1 : out;
}

static mt_status mpi_error(mt_dist *d, int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, s, &n);
  return mt__dist_fault(d, "dist: %s failed in MPI: %.*s", mt__dist_current(d), n, s);
}

/* " for rank 1 and 3" from the peers of the requests still open */
static void awaited(int n, const MPI_Request *reqs, const int *peers, char *buf, size_t len) {
  buf[0] = '\0';
  if (!peers) return;
  size_t at = 0;
  int last = -2, count = 0;
  for (int i = 0; i < n && at + 16 < len; i++) {
    if (reqs[i] == MPI_REQUEST_NULL || peers[i] < 0 || peers[i] == last) continue;
    int dup = 0;
    for (int j = 0; j < i; j++)
      if (reqs[j] != MPI_REQUEST_NULL && peers[j] == peers[i]) dup = 1;
    if (dup) continue;
    at += (size_t)snprintf(buf + at, len - at, "%s%d", count ? ", " : " waiting for rank ", peers[i]);
    last = peers[i];
    count++;
  }
}

/* seconds a wait may go on after a peer left without finalize */
#define MT_LEFT_GRACE 2.0

/* one check between polls: a peer's fault message, this rank's own fail(), dead peers,
 * the deadline. Returns MT_OK to keep waiting. */
static mt_status check(mt_dist *d, int n, MPI_Request *reqs, const int *peers, double start, double *next_look) {
  if (d->broken) {
    mt__dist_cancel(reqs, n);
    return mt__error(MT_ERR_DIST, "dist: %s: %s", mt__dist_current(d), d->broken_msg);
  }
  int got = 0;
  MPI_Status st;
  if (d->ctrl_req != MPI_REQUEST_NULL) MPI_Test(&d->ctrl_req, &got, &st);
  if (got) {
    int src = st.MPI_SOURCE;
    d->ctrl_buf[sizeof d->ctrl_buf - 1] = '\0';
    if (d->ctrl_buf[0] == 'L') {
      /* a peer that ended without finalize may have done all it owed to this collective (its
       * last sends are out): fail only if this wait does not end soon after */
      if (d->left_rank < 0) {
        d->left_rank = src;
        d->left_at = now();
        memcpy(d->left_msg, d->ctrl_buf + 1, sizeof d->left_msg - 1);
        d->left_msg[sizeof d->left_msg - 1] = '\0';
      }
      /* listen again: another peer's failure after this must still stop the wait at once */
      if (MPI_Irecv(d->ctrl_buf, sizeof d->ctrl_buf, MPI_CHAR, MPI_ANY_SOURCE, MT_TAG_FAULT, d->ctrl, &d->ctrl_req) !=
          MPI_SUCCESS)
        d->ctrl_req = MPI_REQUEST_NULL;
    } else {
      mt__dist_cancel(reqs, n);
      return mt__dist_fault(d, "dist: rank %d (pid %d on %s) failed: %s [rank %d was in %s]", src, d->pids[src],
                            d->hosts[src], d->ctrl_buf + 1, d->rank, mt__dist_current(d));
    }
  }
  if (d->left_rank >= 0 && now() - (d->left_at > start ? d->left_at : start) > MT_LEFT_GRACE) {
    int src = d->left_rank;
    mt__dist_cancel(reqs, n);
    return mt__dist_fault(d, "dist: rank %d (pid %d on %s) left: %s [rank %d was in %s]", src, d->pids[src],
                          d->hosts[src], d->left_msg, d->rank, mt__dist_current(d));
  }
  double t = now();
  if (t < *next_look) return MT_OK;
  *next_look = t + 0.1;
  char diag[600], who[256];
  mt__dist_diagnose(d, diag, sizeof diag);
  if (strstr(diag, "has died")) {
    awaited(n, reqs, peers, who, sizeof who);
    mt__dist_cancel(reqs, n);
    return mt__dist_fault(d, "dist: rank %d in %s%s: a peer is gone:%s", d->rank, mt__dist_current(d), who, diag);
  }
  if (t - start > d->timeout) {
    awaited(n, reqs, peers, who, sizeof who);
    mt__dist_cancel(reqs, n);
    return mt__dist_fault(d, "dist: rank %d timed out after %.0f s in %s%s%s%s", d->rank, d->timeout,
                          mt__dist_current(d), who, diag[0] ? ";" : "", diag);
  }
  return MT_OK;
}

double mt__dist_now(void) { return now(); }

mt_status mt__dist_poll(mt_dist *d, double start, double *next_look) {
  return check(d, 0, NULL, NULL, start, next_look);
}

mt_status mt__dist_blocking_allreduce(mt_dist *d, void *buf, int n, MPI_Datatype t, MPI_Op op) {
  pthread_mutex_lock(&d->mu);
  d->blocking = 1;
  d->blocking_since = now();
  pthread_mutex_unlock(&d->mu);
  int rc = MPI_Allreduce(MPI_IN_PLACE, buf, n, t, op, d->world);
  pthread_mutex_lock(&d->mu);
  d->blocking = 0;
  int gone = d->abandoned != NULL;
  pthread_mutex_unlock(&d->mu);
  if (gone) return mt__error(MT_ERR_DIST, "dist: %s", d->broken_msg);
  if (rc != MPI_SUCCESS) return mpi_error(d, rc);
  return MT_OK;
}

/* The watchdog: while the communication thread sits in a blocking MPI call, the same checks a
 * polling wait makes, every 50 ms. On a fault the running work completes with the error (its
 * caller returns) and the communicator is broken; the thread stays inside MPI until the
 * process ends. The fault channel is tested only here while the call blocks, and only by the
 * polling waits otherwise (both under d->mu's rules), so one request is never tested twice. */
static void *watch(void *arg) {
  mt_dist *d = arg;
  struct timespec tick = {0, 50 * 1000 * 1000};
  for (;;) {
    nanosleep(&tick, NULL);
    pthread_mutex_lock(&d->mu);
    if (d->stopping) {
      pthread_mutex_unlock(&d->mu);
      return NULL;
    }
    mt_dist_work *w = d->running;
    if (d->blocking && w && !d->abandoned) {
      double next = 0;
      mt_status st = check(d, 0, NULL, NULL, d->blocking_since, &next);
      if (st != MT_OK) {
        w->st = st;
        snprintf(w->msg, sizeof w->msg, "%s", mt_last_error());
        d->abandoned = w; /* (the communicator is broken: only ever compared with NULL from here on) */
        w->abandoned = 1;
        w->done = 1;
        pthread_cond_broadcast(&d->done_cv);
      }
    }
    pthread_mutex_unlock(&d->mu);
  }
}

mt_status mt__dist_start_watchdog(mt_dist *d) {
  if (pthread_create(&d->watchdog, NULL, watch, d) != 0)
    return mt__error(MT_ERR_INTERNAL, "dist.init: cannot start the watchdog thread");
  d->watchdog_started = 1;
  return MT_OK;
}

/* Busy polling keeps latency low; after a few hundred empty polls yield the core, since ranks
 * often outnumber cores (tests, oversubscribed benchmarks) and a spinning rank starves its peer. */
#define MT_SPIN 200

mt_status mt__dist_waitall(mt_dist *d, int n, MPI_Request *reqs, const int *peers) {
  double start = now(), next_look = start + 0.1;
  for (int spin = 0;; spin++) {
    int done = 0;
    int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      mt__dist_cancel(reqs, n);
      return mpi_error(d, rc);
    }
    if (done) return MT_OK;
    if ((spin & 15) == 0) MT_TRY(check(d, n, reqs, peers, start, &next_look));
    if (spin > MT_SPIN) sched_yield();
  }
}

mt_status mt__dist_waitany(mt_dist *d, int n, MPI_Request *reqs, const int *peers, int *index) {
  double start = now(), next_look = start + 0.1;
  for (int spin = 0;; spin++) {
    int done = 0, i = MPI_UNDEFINED;
    int rc = MPI_Testany(n, reqs, &i, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      mt__dist_cancel(reqs, n);
      return mpi_error(d, rc);
    }
    if (done) {
      *index = i == MPI_UNDEFINED ? -1 : i;
      return MT_OK;
    }
    if ((spin & 15) == 0) MT_TRY(check(d, n, reqs, peers, start, &next_look));
    if (spin > MT_SPIN) sched_yield();
  }
}

/* One dup of a byte block per dtype: f16 and bf16 have the same size but need different
 * handles, so the user-defined reduction can tell them apart. Created on first use by the
 * communication thread, freed by MPI_Finalize. */
static MPI_Datatype mt__bytes[MT_NUM_DTYPES];
static pthread_once_t mt__bytes_once = PTHREAD_ONCE_INIT;

static void make_bytes(void) {
  for (int dt = 0; dt < MT_NUM_DTYPES; dt++) {
    MPI_Datatype t;
    MPI_Type_contiguous((int)mt_dtype_size(dt), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    mt__bytes[dt] = t;
  }
}

MPI_Datatype mt__dist_bytes_type(int dtype) {
  pthread_once(&mt__bytes_once, make_bytes);
  return mt__bytes[dtype];
}

int mt__dist_dtype_of(MPI_Datatype t) {
  pthread_once(&mt__bytes_once, make_bytes);
  for (int dt = 0; dt < MT_NUM_DTYPES; dt++)
    if (mt__bytes[dt] == t) return dt;
  return -1;
}
#endif

void *mt__dist_scratch(mt_dist *d, size_t bytes) {
  if (bytes <= d->scratch_bytes) return d->scratch;
  void *p = realloc(d->scratch, bytes);
  if (!p) return NULL;
  d->scratch = p;
  d->scratch_bytes = bytes;
  return p;
}
