/* resample.c: PIL-style antialiased bilinear resampling (see resample.h) and mt_image_resize.
 *
 * For output i of an axis with scale s = region length / output size, the filter is centred
 * at in0 + (i + 0.5) s in input coordinates (pixel k covers [k, k + 1)), its support is
 * max(s, 1) input pixels each side, and tap k weighs tri((k + 0.5 - centre) / max(s, 1)),
 * tri(t) = max(0, 1 - |t|), normalised to sum 1. Downscaling thus averages over every input
 * pixel the output pixel covers (no aliasing), upscaling is plain bilinear. */
#include "resample.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/tensor.h"

#define MT_RESAMPLE_MAX_OUT 65536
#define MT_RESAMPLE_MAX_CHANNELS 64

void mt__resampler_free(mt__resampler *r) {
  if (!r) return;
  free(r->x.start);
  free(r->x.w);
  free(r->y.start);
  free(r->y.w);
  free(r->rows);
  memset(r, 0, sizeof *r);
}

/* make *p hold at least n elements of size elt (contents not kept) */
static int grow(void **p, size_t *cap, size_t n, size_t elt) {
  if (n <= *cap) return 1;
  if (n > SIZE_MAX / elt) return 0;
  void *q = malloc(n * elt);
  if (!q) return 0;
  free(*p);
  *p = q;
  *cap = n;
  return 1;
}

static inline double tri(double t) {
  t = fabs(t);
  return t < 1.0 ? 1.0 - t : 0.0;
}

/* The coefficient table of one axis: `out` outputs from the input span [in0, in0 + len),
 * taps clamped to [lo, hi) (lo < hi). */
static mt_status axis_coeffs(mt__axis *a, double in0, double len, int out, int lo, int hi, int flip,
                             const char *name) {
  double scale = len / out, fscale = scale > 1.0 ? scale : 1.0, support = fscale, inv = 1.0 / fscale;
  double taps_d = 2.0 * ceil(support) + 1.0;
  int taps = taps_d < (double)(hi - lo) ? (int)taps_d : hi - lo;
  if (!grow((void **)&a->start, &a->cap_start, (size_t)out, sizeof(int)) ||
      !grow((void **)&a->w, &a->cap_w, (size_t)out * (size_t)taps, sizeof(float)))
    return mt__error(MT_ERR_MEMORY, "resample: %s: out of memory for %d x %d filter coefficients", name, out, taps);
  a->n = out;
  a->taps = taps;
  a->lo = hi;
  a->hi = lo;
  for (int i = 0; i < out; i++) {
    double centre = in0 + (i + 0.5) * scale;
    /* the clamps keep the conversions to int defined whatever the region */
    double fmin = floor(centre - support + 0.5), fmax = floor(centre + support + 0.5);
    int xmin = fmin < lo ? lo : fmin > hi ? hi : (int)fmin;
    int xmax = fmax > hi ? hi : fmax < lo ? lo : (int)fmax;
    int count = xmax - xmin;
    if (count > taps) count = taps; /* cannot happen (count <= 2 support + 1); keeps w in bounds */
    double sum = 0;
    for (int k = 0; k < count; k++) sum += tri((xmin + k + 0.5 - centre) * inv);
    int start;
    int slot = flip ? out - 1 - i : i;
    float *w = a->w + (size_t)slot * taps;
    for (int k = 0; k < taps; k++) w[k] = 0.0f;
    if (count <= 0 || sum <= 0) { /* the centre lies outside [lo, hi): take the nearest pixel */
      double c = floor(centre);
      xmin = c < lo ? lo : c >= hi ? hi - 1 : (int)c;
      start = xmin + taps > hi ? hi - taps : xmin;
      w[xmin - start] = 1.0f;
    } else {
      start = xmin + taps > hi ? hi - taps : xmin; /* shift so every output reads `taps` pixels */
      for (int k = 0; k < count; k++) w[xmin - start + k] = (float)(tri((xmin + k + 0.5 - centre) * inv) / sum);
    }
    a->start[slot] = start;
    if (start < a->lo) a->lo = start;
    if (start + taps > a->hi) a->hi = start + taps;
  }
  return MT_OK;
}

/* horizontal pass of one row, `C` channels (a constant in the specialised calls) */
static inline void hpass(const mt__axis *ax, const uint8_t *src, float *dst, int C) {
  const int taps = ax->taps;
  for (int i = 0; i < ax->n; i++) {
    const uint8_t *p = src + (size_t)ax->start[i] * C;
    const float *w = ax->w + (size_t)i * taps;
    float acc[MT_RESAMPLE_MAX_CHANNELS];
    for (int c = 0; c < C; c++) acc[c] = 0.0f;
    for (int k = 0; k < taps; k++)
      for (int c = 0; c < C; c++) acc[c] += w[k] * (float)p[k * C + c];
    for (int c = 0; c < C; c++) dst[(size_t)i * C + c] = acc[c];
  }
}

static void hpass3(const mt__axis *ax, const uint8_t *src, float *dst) {
  const int taps = ax->taps;
  for (int i = 0; i < ax->n; i++) {
    const uint8_t *p = src + (size_t)ax->start[i] * 3;
    const float *w = ax->w + (size_t)i * taps;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
    for (int k = 0; k < taps; k++) {
      a0 += w[k] * (float)p[3 * k];
      a1 += w[k] * (float)p[3 * k + 1];
      a2 += w[k] * (float)p[3 * k + 2];
    }
    dst[3 * i] = a0;
    dst[3 * i + 1] = a1;
    dst[3 * i + 2] = a2;
  }
}

mt_status mt__resample(mt__resampler *r, const uint8_t *src, int width, int height, size_t stride, int channels,
                       double x0, double y0, double w, double h, int cx0, int cy0, int cx1, int cy1, int out_w,
                       int out_h, int flip, float *dst, const char *name) {
  if (!name) name = "image";
  if (!r || !src || !dst) return mt__error(MT_ERR_ARG, "resample: %s: NULL argument", name);
  if (width <= 0 || height <= 0 || channels < 1 || channels > MT_RESAMPLE_MAX_CHANNELS ||
      stride < (size_t)width * (size_t)channels)
    return mt__error(MT_ERR_SHAPE, "resample: %s: bad source %d x %d x %d (row stride %zu)", name, height, width,
                     channels, stride);
  if (out_w < 1 || out_h < 1 || out_w > MT_RESAMPLE_MAX_OUT || out_h > MT_RESAMPLE_MAX_OUT)
    return mt__error(MT_ERR_SHAPE, "resample: %s: output size %d x %d outside 1..%d", name, out_w, out_h,
                     MT_RESAMPLE_MAX_OUT);
  if (!(w > 0) || !(h > 0) || !isfinite(x0) || !isfinite(y0) || !isfinite(w) || !isfinite(h) ||
      fabs(x0) > 1e9 || fabs(y0) > 1e9 || w > 1e9 || h > 1e9)
    return mt__error(MT_ERR_ARG, "resample: %s: bad region x %g y %g w %g h %g", name, x0, y0, w, h);
  if (cx0 < 0) cx0 = 0;
  if (cy0 < 0) cy0 = 0;
  if (cx1 > width) cx1 = width;
  if (cy1 > height) cy1 = height;
  if (cx0 >= cx1 || cy0 >= cy1)
    return mt__error(MT_ERR_ARG, "resample: %s: empty clamp window [%d, %d) x [%d, %d) in a %d x %d image", name,
                     cx0, cx1, cy0, cy1, width, height);
  MT_TRY(axis_coeffs(&r->x, x0, w, out_w, cx0, cx1, flip, name));
  MT_TRY(axis_coeffs(&r->y, y0, h, out_h, cy0, cy1, 0, name));

  /* horizontal pass over the rows the vertical pass reads, and only those */
  const int C = channels, ylo = r->y.lo, nrows = r->y.hi - r->y.lo;
  const size_t rowlen = (size_t)out_w * C;
  if (!grow((void **)&r->rows, &r->cap_rows, (size_t)nrows * rowlen, sizeof(float)))
    return mt__error(MT_ERR_MEMORY, "resample: %s: out of memory for %d x %zu intermediate values", name, nrows,
                     rowlen);
  for (int y = 0; y < nrows; y++) {
    const uint8_t *s = src + (size_t)(ylo + y) * stride;
    float *d = r->rows + (size_t)y * rowlen;
    if (C == 3) hpass3(&r->x, s, d);
    else if (C == 1) hpass(&r->x, s, d, 1);
    else if (C == 4) hpass(&r->x, s, d, 4);
    else hpass(&r->x, s, d, C);
  }

  /* vertical pass: whole rows at a time, which vectorises */
  const int taps = r->y.taps;
  for (int j = 0; j < out_h; j++) {
    const float *wt = r->y.w + (size_t)j * taps;
    const float *base = r->rows + (size_t)(r->y.start[j] - ylo) * rowlen;
    float *o = dst + (size_t)j * rowlen;
    const float w0 = wt[0];
    for (size_t i = 0; i < rowlen; i++) o[i] = w0 * base[i];
    for (int k = 1; k < taps; k++) {
      const float wk = wt[k];
      const float *s = base + (size_t)k * rowlen;
      for (size_t i = 0; i < rowlen; i++) o[i] += wk * s[i];
    }
  }
  return MT_OK;
}

mt_status mt_image_resize(mt_tensor **out, const mt_tensor *image, int ow, int oh) {
  const char *op = "image_resize";
  if (!out) return mt__error(MT_ERR_ARG, "%s: out is NULL", op);
  *out = NULL;
  MT_CHECK_TENSOR(image, op, "image");
  char sb[64];
  if (image->dtype != MT_U8)
    return mt__error(MT_ERR_DTYPE, "%s: image must be uint8, got %s", op, mt_dtype_name(image->dtype));
  if (image->device != MT_CPU) return mt__error(MT_ERR_DEVICE, "%s: image must be on the CPU", op);
  if (image->ndim != 2 && image->ndim != 3)
    return mt__error(MT_ERR_SHAPE, "%s: image must be H x W x C or H x W, got %s", op,
                     mt__shape_str(image, sb, sizeof sb));
  if (!mt__is_contiguous(image))
    return mt__error(MT_ERR_ARG, "%s: image %s must be contiguous", op, mt__shape_str(image, sb, sizeof sb));
  int64_t H = image->sizes[0], W = image->sizes[1], C = image->ndim == 3 ? image->sizes[2] : 1;
  if (H < 1 || W < 1 || H > INT_MAX / 4 || W > INT_MAX / 4 || C < 1 || C > MT_RESAMPLE_MAX_CHANNELS)
    return mt__error(MT_ERR_SHAPE, "%s: cannot resize an image of %s (H, W >= 1, 1..%d channels)", op,
                     mt__shape_str(image, sb, sizeof sb), MT_RESAMPLE_MAX_CHANNELS);
  if (ow < 1 || oh < 1 || ow > MT_RESAMPLE_MAX_OUT || oh > MT_RESAMPLE_MAX_OUT)
    return mt__error(MT_ERR_ARG, "%s: output size %d x %d (width x height) outside 1..%d", op, ow, oh,
                     MT_RESAMPLE_MAX_OUT);
  size_t n = (size_t)ow * (size_t)oh * (size_t)C;
  float *tmp = malloc(n * sizeof(float));
  if (!tmp) return mt__error(MT_ERR_MEMORY, "%s: out of memory for %d x %d x %d floats", op, oh, ow, (int)C);
  mt__resampler r;
  memset(&r, 0, sizeof r);
  mt_status st = mt__resample(&r, (const uint8_t *)mt__data(image), (int)W, (int)H, (size_t)(W * C), (int)C, 0.0,
                              0.0, (double)W, (double)H, 0, 0, (int)W, (int)H, ow, oh, 0, tmp, op);
  mt__resampler_free(&r);
  mt_tensor *res = NULL;
  if (st == MT_OK) {
    int64_t sizes[3] = {oh, ow, C};
    st = mt_tensor_new(&res, MT_U8, MT_CPU, image->ndim, sizes);
  }
  if (st == MT_OK) {
    uint8_t *d = mt_tensor_data(res);
    for (size_t i = 0; i < n; i++) { /* weights are >= 0 and sum to 1: only float error leaves [0, 255] */
      float v = tmp[i] < 0.0f ? 0.0f : tmp[i] > 255.0f ? 255.0f : tmp[i];
      d[i] = (uint8_t)(v + 0.5f);
    }
    *out = res;
  }
  free(tmp);
  return st;
}
