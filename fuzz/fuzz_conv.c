/* fuzz_conv.c: libFuzzer target comparing the CPU convolution (mt_conv2d_forward, _backward_input,
 * _backward_params) against direct loops in double, on geometries read from the input: batch,
 * groups, planes, image and kernel sizes, stride, padding, dilation, dtype, bias, thread count.
 * conv.c picks among several paths by shape (images grouped into one GEMM, one shifted run per
 * kernel tap for "same" stride-1 convolutions, gradInput as a flipped forward convolution,
 * per-thread runs of the batch with partial weight gradients); each must give the loops' answer.
 *
 * What must hold, whatever the bytes:
 *  - a geometry the loops accept (positive output size, pads >= 0, ...) runs and matches them
 *    within rounding (bounded by the sum of the magnitudes of each result's terms);
 *  - any other geometry is rejected with a status and a message, and nothing is written;
 *  - nothing crashes, leaks or trips ASan/UBSan. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "moontorch.h"

#define CPU (-1) /* device number of the host */

typedef struct {
  const uint8_t *p;
  size_t n;
} stream;
static uint8_t u8(stream *s) {
  if (!s->n) return 0;
  s->n--;
  return *s->p++;
}

typedef struct {
  int N, C, O, H, W, kH, kW, sW, sH, pW, pH, dW, dH, groups, bias, f64, threads;
  double scale;
} geom;

/* output size, or 0 where the loops have no output (the library must then refuse) */
static int out_size(int n, int k, int s, int p, int d) {
  int ek = d * (k - 1) + 1;
  if (s < 1 || d < 1 || p < 0 || n + 2 * p < ek) return 0;
  return (n + 2 * p - ek) / s + 1;
}

static void fail(const char *what, const geom *g) {
  fprintf(stderr,
          "fuzz_conv: %s: N%d C%d O%d %dx%d k%dx%d s%d,%d p%d,%d d%d,%d g%d bias%d %s threads %d; last error: %s\n",
          what, g->N, g->C, g->O, g->H, g->W, g->kH, g->kW, g->sW, g->sH, g->pW, g->pH, g->dW, g->dH, g->groups,
          g->bias, g->f64 ? "f64" : "f32", g->threads, mt_last_error());
  abort();
}

static double get(const mt_tensor *t, int f64, int64_t i) {
  return f64 ? ((const double *)mt_tensor_data(t))[i] : ((const float *)mt_tensor_data(t))[i];
}

/* a tensor of the dtype filled from a small generator; values also kept in double */
static mt_tensor *make(int f64, int ndim, const int64_t *sizes, uint64_t *rng, double **vals) {
  mt_tensor *t = NULL;
  if (mt_tensor_new(&t, f64 ? MT_F64 : MT_F32, CPU, ndim, sizes) != MT_OK) return NULL;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= sizes[i];
  *vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
    double v = (double)(*rng >> 11) / 9007199254740992.0 * 2 - 1;
    if (f64) ((double *)mt_tensor_data(t))[i] = v;
    else ((float *)mt_tensor_data(t))[i] = (float)v, v = (float)v;
    (*vals)[i] = v;
  }
  return t;
}

static void check(const char *what, const mt_tensor *t, const double *want, const double *mag, int64_t n,
                  const geom *g) {
  double eps = g->f64 ? 1e-12 : 2e-6;
  for (int64_t i = 0; i < n; i++) {
    double got = get(t, g->f64, i);
    if (!(fabs(got - want[i]) <= eps * (mag[i] + 1) * 8)) {
      fprintf(stderr, "fuzz_conv: %s[%lld] = %.17g, loops give %.17g (magnitude %g)\n", what, (long long)i, got,
              want[i], mag[i]);
      fail(what, g);
    }
  }
}

static void run(const geom *g, uint64_t seed) {
  int oH = out_size(g->H, g->kH, g->sH, g->pH, g->dH), oW = out_size(g->W, g->kW, g->sW, g->pW, g->dW);
  int valid = oH > 0 && oW > 0 && g->groups >= 1 && g->C % g->groups == 0 && g->O % g->groups == 0;
  int Cg = valid ? g->C / g->groups : 1, Og = valid ? g->O / g->groups : 1;
  int64_t xs[4] = {g->N, g->C, g->H, g->W}, ws[4] = {g->O, Cg, g->kH, g->kW}, bs[1] = {g->O};
  int64_t ys[4] = {g->N, g->O, oH > 0 ? oH : 1, oW > 0 ? oW : 1};
  uint64_t rng = seed | 1;
  double *x, *w, *b, *dy, *dw0, *db0;
  mt_tensor *tx = make(g->f64, 4, xs, &rng, &x), *tw = make(g->f64, 4, ws, &rng, &w);
  mt_tensor *tb = make(g->f64, 1, bs, &rng, &b), *tdy = make(g->f64, 4, ys, &rng, &dy);
  mt_tensor *tdw = make(g->f64, 4, ws, &rng, &dw0), *tdb = make(g->f64, 1, bs, &rng, &db0);
  mt_tensor *ty = NULL, *tdx = NULL;
  if (!tx || !tw || !tb || !tdy || !tdw || !tdb) fail("allocating the operands", g);
  if (mt_tensor_new(&ty, g->f64 ? MT_F64 : MT_F32, CPU, 1, bs) != MT_OK) fail("allocating y", g);
  if (mt_tensor_new(&tdx, g->f64 ? MT_F64 : MT_F32, CPU, 1, bs) != MT_OK) fail("allocating dx", g);
  mt_set_num_threads(g->threads);

  mt_status s1 =
      mt_conv2d_forward(ty, tx, tw, g->bias ? tb : NULL, g->sW, g->sH, g->pW, g->pH, g->dW, g->dH, g->groups);
  mt_status s2 = mt_conv2d_backward_input(tdx, tx, tdy, tw, g->sW, g->sH, g->pW, g->pH, g->dW, g->dH, g->groups);
  mt_status s3 = mt_conv2d_backward_params(tdw, g->bias ? tdb : NULL, tx, tdy, g->scale, g->sW, g->sH, g->pW, g->pH,
                                           g->dW, g->dH, g->groups);
  if (!valid) {
    if (s1 == MT_OK || s2 == MT_OK || s3 == MT_OK) fail("accepted a geometry without an output", g);
    if (!mt_last_error()[0]) fail("refused without a message", g);
    for (int64_t i = 0; i < (int64_t)g->O * Cg * g->kH * g->kW; i++)
      if (get(tdw, g->f64, i) != dw0[i]) fail("a refused call wrote gradWeight", g);
  } else {
    if (s1 != MT_OK || s2 != MT_OK || s3 != MT_OK) fail("refused a valid geometry", g);
    int64_t ny = (int64_t)g->N * g->O * oH * oW, nx = (int64_t)g->N * g->C * g->H * g->W;
    int64_t nw = (int64_t)g->O * Cg * g->kH * g->kW;
    double *y = calloc((size_t)ny + 1, sizeof *y), *ym = calloc((size_t)ny + 1, sizeof *y);
    double *dx = calloc((size_t)nx + 1, sizeof *y), *dxm = calloc((size_t)nx + 1, sizeof *y);
    double *dw = calloc((size_t)nw + 1, sizeof *y), *dwm = calloc((size_t)nw + 1, sizeof *y);
    double *db = calloc((size_t)g->O + 1, sizeof *y), *dbm = calloc((size_t)g->O + 1, sizeof *y);
    for (int n = 0; n < g->N; n++)
      for (int o = 0; o < g->O; o++)
        for (int oy = 0; oy < oH; oy++)
          for (int ox = 0; ox < oW; ox++) {
            int64_t yi = (((int64_t)n * g->O + o) * oH + oy) * oW + ox;
            double acc = g->bias ? b[o] : 0, mag = g->bias ? fabs(b[o]) : 0, d = dy[yi];
            db[o] += d, dbm[o] += fabs(d);
            for (int c = 0; c < Cg; c++)
              for (int ky = 0; ky < g->kH; ky++)
                for (int kx = 0; kx < g->kW; kx++) {
                  int iy = oy * g->sH - g->pH + ky * g->dH, ix = ox * g->sW - g->pW + kx * g->dW;
                  if (iy < 0 || iy >= g->H || ix < 0 || ix >= g->W) continue;
                  int64_t xi = (((int64_t)n * g->C + o / Og * Cg + c) * g->H + iy) * g->W + ix;
                  int64_t wi = (((int64_t)o * Cg + c) * g->kH + ky) * g->kW + kx;
                  acc += x[xi] * w[wi], mag += fabs(x[xi] * w[wi]);
                  dx[xi] += d * w[wi], dxm[xi] += fabs(d * w[wi]);
                  dw[wi] += d * x[xi], dwm[wi] += fabs(d * x[xi]);
                }
            y[yi] = acc, ym[yi] = mag;
          }
    for (int64_t i = 0; i < nw; i++) dw[i] = dw0[i] + g->scale * dw[i], dwm[i] = fabs(dw0[i]) + fabs(g->scale) * dwm[i];
    for (int o = 0; o < g->O; o++) db[o] = db0[o] + g->scale * db[o], dbm[o] = fabs(db0[o]) + fabs(g->scale) * dbm[o];
    check("output", ty, y, ym, ny, g);
    check("gradInput", tdx, dx, dxm, nx, g);
    check("gradWeight", tdw, dw, dwm, nw, g);
    if (g->bias) check("gradBias", tdb, db, dbm, g->O, g);
    free(y), free(ym), free(dx), free(dxm), free(dw), free(dwm), free(db), free(dbm);
  }
  free(x), free(w), free(b), free(dy), free(dw0), free(db0);
  mt_tensor_release(tx), mt_tensor_release(tw), mt_tensor_release(tb), mt_tensor_release(tdy);
  mt_tensor_release(tdw), mt_tensor_release(tdb), mt_tensor_release(ty), mt_tensor_release(tdx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stream s = {data, size};
  geom g;
  uint8_t planes = u8(&s);
  g.groups = 1 + u8(&s) % 3;
  /* planes per group: mostly a few, sometimes 32 or 64 and more (Winograd needs 32 on both
   * sides, the flipped gradInput 64 input planes or Winograd on the flipped shape) */
  int cg = planes & 0x80 ? (planes & 0x40 ? 64 : 32) + (planes & 3) : 1 + (planes & 7) % 5;
  g.C = cg * g.groups + (u8(&s) % 16 == 0); /* now and then not divisible */
  uint8_t op = u8(&s);
  g.O = (op & 0x80 ? 32 + (op & 3) : 1 + op % 6) * g.groups;
  g.N = u8(&s) % 10;
  g.H = 1 + u8(&s) % 12, g.W = 1 + u8(&s) % 12;
  g.kH = 1 + u8(&s) % 5, g.kW = 1 + u8(&s) % 5;
  uint8_t sp = u8(&s), pd = u8(&s), dl = u8(&s);
  g.sW = 1 + (sp & 3) % 3, g.sH = 1 + (sp >> 2 & 3) % 3;
  g.pW = (pd & 7) % 5 - (pd == 0xff), g.pH = (pd >> 3 & 7) % 5;
  g.dW = 1 + (dl & 3) % 3, g.dH = 1 + (dl >> 2 & 3) % 3;
  if (dl & 0x80) g.sW = 0; /* rejected */
  uint8_t fl = u8(&s);
  g.bias = fl & 1, g.f64 = fl >> 1 & 1, g.threads = 1 + (fl >> 2 & 3) % 3;
  g.scale = (fl >> 4) / 4.0 - 1;
  /* keep one run quick: the loops below are N*O*L*Cg*k*k multiply-adds */
  if ((double)g.N * g.O * g.H * g.W * cg * g.kH * g.kW > 3e7) return 0;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  while (s.n) seed = seed * 31 + u8(&s);
  run(&g, seed);
  return 0;
}
