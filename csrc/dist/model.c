/* model.c: the cost table behind the `auto` algorithm. Jia et al. switch between two
 * allreduce algorithms by message size; here every algorithm is timed on this job's ranks at
 * 4 KB, 16 KB, ... (mt_dist_tune, a collective) and `auto` picks the fastest prediction for each
 * message, interpolating log-log between measured sizes. Every rank keeps the same table (the
 * slowest rank's time per entry), so every rank chooses the same algorithm. The table can be
 * saved and loaded, so a job need not measure at each start. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <unistd.h>
#include "queue.h"

/* the algorithms timed and chosen from, in list order: MT_DIST_ALGS's rows with TUNED 1 */
#define TUNED_1(E) E,
#define TUNED_0(E)
#define TUNED_ROW(E, NAME, TUNED, ...) TUNED_##TUNED(E)
static const int tuned[] = {MT_DIST_ALGS(TUNED_ROW, ~)};
#define NTUNED ((int)(sizeof tuned / sizeof *tuned))
static int64_t row_bytes(int i) { return (int64_t)4096 << (2 * i); }

double mt_dist_model_time(const mt_dist *d, int alg, int64_t bytes) {
  if (!d || alg < 0 || alg >= MT_NUM_ALG || d->model_rows == 0 || d->model[alg][0] <= 0) return -1;
  int rows = d->model_rows;
  for (int i = 0; i < rows; i++)
    if (d->model[alg][i] <= 0) return -1;
  if (bytes <= row_bytes(0) || rows == 1)
    return d->model[alg][0] * (rows == 1 && bytes > row_bytes(0) ? (double)bytes / row_bytes(0) : 1);
  if (bytes >= row_bytes(rows - 1)) return d->model[alg][rows - 1] * (double)bytes / (double)row_bytes(rows - 1);
  double x = log((double)bytes / 4096.0) / log(4.0);
  int i = (int)x;
  double f = x - i, a = log(d->model[alg][i]), b = log(d->model[alg][i + 1]);
  return exp(a + f * (b - a));
}

int mt_dist_auto_choice(const mt_dist *d, int64_t bytes) {
  int best = MT_ALG_MPI;
  double bt = -1;
  for (int k = 0; k < NTUNED; k++) {
    double t = mt_dist_model_time(d, tuned[k], bytes);
    if (t > 0 && (bt < 0 || t < bt)) {
      bt = t;
      best = tuned[k];
    }
  }
  return best;
}

static mt_status submit_model(mt_dist *d, int kind, int64_t arg, int reps, const char *path) {
  if (!d) return mt__error(MT_ERR_ARG, "dist: dist.init() was not called");
  if (d->size == 1) return MT_OK; /* one rank: nothing to choose */
  mt_dist_work *w = calloc(1, sizeof *w);
  if (!w) return mt__error(MT_ERR_MEMORY, "dist: out of memory");
  w->kind = kind;
  w->arg = arg;
  w->root = reps;
  if (path) snprintf(w->path, sizeof w->path, "%s", path);
  return mt__dist_submit(d, w, NULL);
}

mt_status mt_dist_tune(mt_dist *d, int64_t max_bytes, int reps) {
  if (max_bytes < 4096 || reps < 1)
    return mt__error(MT_ERR_ARG, "dist.tune: need maxBytes >= 4096 and reps >= 1, got %lld and %d",
                     (long long)max_bytes, reps);
  return submit_model(d, MT_WORK_TUNE, max_bytes, reps, NULL);
}

mt_status mt_dist_load_model(mt_dist *d, const char *path) {
  if (!path) return mt__error(MT_ERR_ARG, "dist.loadModel: path is NULL");
  if (strlen(path) >= sizeof(((mt_dist_work *)0)->path)) return mt__error(MT_ERR_ARG, "dist.loadModel: path too long");
  return submit_model(d, MT_WORK_LOAD_MODEL, 0, 0, path);
}

mt_status mt_dist_save_model(const mt_dist *d, const char *path) {
  if (!d || !path) return mt__error(MT_ERR_ARG, "dist.saveModel: not initialised or path is NULL");
  if (d->rank != 0 || d->model_rows == 0) return MT_OK;
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return mt__error(MT_ERR_IO, "dist.saveModel: cannot write %s", tmp);
  fprintf(f, "moontorch-dist-model 1\nranks %d nodes %d rows %d\n", d->size, d->nodes, d->model_rows);
  for (int k = 0; k < NTUNED; k++) {
    fprintf(f, "%s", mt_dist_alg_name(tuned[k]));
    for (int i = 0; i < d->model_rows; i++) fprintf(f, " %.9g", d->model[tuned[k]][i]);
    fprintf(f, "\n");
  }
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    unlink(tmp);
    return mt__error(MT_ERR_IO, "dist.saveModel: cannot write %s", path);
  }
  return MT_OK;
}

#ifdef MT_WITH_MPI
/* rank 0 parses the file; table[0] carries the row count (negative: error in msg) */
static int parse(const mt_dist *d, const char *path, double *table, char *msg, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(msg, len, "cannot open %.400s", path);
    return -1;
  }
  int ranks = 0, nodes = 0, rows = 0, ok = 0;
  char magic[64];
  if (fscanf(f, "%63s 1 ranks %d nodes %d rows %d", magic, &ranks, &nodes, &rows) == 4 &&
      strcmp(magic, "moontorch-dist-model") == 0 && rows >= 1 && rows <= MT_DIST_MODEL_SIZES) {
    ok = 1;
    for (int k = 0; k < NTUNED && ok; k++) {
      char name[32];
      ok = fscanf(f, "%31s", name) == 1 && strcmp(name, mt_dist_alg_name(tuned[k])) == 0;
      for (int i = 0; i < rows && ok; i++) ok = fscanf(f, "%lf", &table[1 + k * MT_DIST_MODEL_SIZES + i]) == 1;
    }
  }
  fclose(f);
  if (!ok) {
    snprintf(msg, len, "%.400s is not a moontorch-dist-model file", path);
    return -1;
  }
  if (ranks != d->size || nodes != d->nodes) {
    snprintf(msg, len, "%.380s was measured on %d ranks in %d nodes, this job has %d ranks in %d nodes", path, ranks,
             nodes, d->size, d->nodes);
    return -1;
  }
  return rows;
}

static mt_status load(mt_dist *d, mt_dist_work *w) {
  enum { N = 1 + NTUNED * MT_DIST_MODEL_SIZES };
  double table[N];
  char msg[512] = "";
  memset(table, 0, sizeof table);
  if (d->rank == 0) table[0] = parse(d, w->path, table, msg, sizeof msg);
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Ibcast(table, N, MPI_DOUBLE, 0, d->world, &r);
  MT_TRY(mt__dist_waitall(d, 1, &r, NULL));
  if (table[0] < 0) {
    MPI_Ibcast(msg, (int)sizeof msg, MPI_CHAR, 0, d->world, &r);
    MT_TRY(mt__dist_waitall(d, 1, &r, NULL));
    return mt__error(MT_ERR_IO, "dist.loadModel: %s", msg);
  }
  d->model_rows = (int)table[0];
  for (int k = 0; k < NTUNED; k++)
    for (int i = 0; i < d->model_rows; i++) d->model[tuned[k]][i] = table[1 + k * MT_DIST_MODEL_SIZES + i];
  return MT_OK;
}

/* the median over reps (at most 16) of each algorithm at each size, then the max over ranks */
static mt_status tune(mt_dist *d, int64_t max_bytes, int reps) {
  int rows = 0;
  while (rows < MT_DIST_MODEL_SIZES && row_bytes(rows) <= max_bytes) rows++;
  float *buf = malloc((size_t)row_bytes(rows - 1));
  if (!buf) return mt__error(MT_ERR_MEMORY, "dist.tune: cannot allocate %lld bytes", (long long)row_bytes(rows - 1));
  double t[NTUNED][MT_DIST_MODEL_SIZES] = {{0}};
  mt_status st = MT_OK;
  for (int i = 0; i < rows && st == MT_OK; i++) {
    int64_t n = row_bytes(i) / 4;
    for (int k = 0; k < NTUNED && st == MT_OK; k++) {
      double ts[16];
      int m = reps < 16 ? reps : 16;
      for (int rep = 0; rep < m && st == MT_OK; rep++) {
        for (int64_t j = 0; j < n; j++) buf[j] = 1.0f + (float)((j + d->rank) % 7) * 0.125f;
        MPI_Request r = MPI_REQUEST_NULL;
        MPI_Ibarrier(d->world, &r);
        st = mt__dist_waitall(d, 1, &r, NULL);
        double t0 = mt__dist_now();
        if (st == MT_OK) st = mt__dist_exec(d, MT_WORK_ALLREDUCE, buf, NULL, n, MT_F32, MT_RED_SUM, tuned[k], 0);
        ts[rep] = mt__dist_now() - t0;
      }
      /* the median: what a run sees typically (the benchmark reports medians too) */
      for (int a = 1; a < m; a++)
        for (int b = a; b > 0 && ts[b - 1] > ts[b]; b--) {
          double x = ts[b];
          ts[b] = ts[b - 1];
          ts[b - 1] = x;
        }
      t[k][i] = ts[m / 2];
    }
  }
  free(buf);
  MT_TRY(st);
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Iallreduce(MPI_IN_PLACE, t, NTUNED * MT_DIST_MODEL_SIZES, MPI_DOUBLE, MPI_MAX, d->world, &r);
  MT_TRY(mt__dist_waitall(d, 1, &r, NULL));
  d->model_rows = rows;
  for (int k = 0; k < NTUNED; k++)
    for (int i = 0; i < rows; i++) d->model[tuned[k]][i] = t[k][i];
  return MT_OK;
}
#endif

mt_status mt__dist_run_model(mt_dist *d, mt_dist_work *w) {
#ifdef MT_WITH_MPI
  if (w->kind == MT_WORK_TUNE) {
    mt__dist_set_current(d, "tune #%lld (timing the allreduce algorithms)", (long long)w->seq);
    return tune(d, w->arg, w->root);
  }
  mt__dist_set_current(d, "loadModel #%lld (%s)", (long long)w->seq, w->path);
  return load(d, w);
#else
  (void)w;
  return mt__error(MT_ERR_UNSUPPORTED, "dist: no MPI in this build");
#endif
}
