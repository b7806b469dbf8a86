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
  free(r->x.w4);
  free(r->y.w4);
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

/* The input pixels output pixel centre `centre` reads: PIL's window [floor(centre - support
 * + 0.5), floor(centre + support + 0.5)) clamped to [lo, hi), less end taps of weight 0 (at
 * scale 1 that leaves one tap, not three). When nothing is left, the centre is outside
 * [lo, hi): the nearest pixel, with weight 1. Returns the count, >= 1. */
static int window(double centre, double support, double inv, int lo, int hi, int *xmin) {
  /* the clamps keep the conversions to int defined whatever the region */
  double fmin = floor(centre - support + 0.5), fmax = floor(centre + support + 0.5);
  int a = fmin < lo ? lo : fmin > hi ? hi : (int)fmin;
  int b = fmax > hi ? hi : fmax < lo ? lo : (int)fmax;
  while (a < b && tri((a + 0.5 - centre) * inv) == 0) a++;
  while (b > a && tri((b - 0.5 - centre) * inv) == 0) b--;
  if (a == b) {
    double c = floor(centre);
    a = c < lo ? lo : c >= hi ? hi - 1 : (int)c;
    b = a + 1;
  }
  *xmin = a;
  return b - a;
}

/* The coefficient table of one axis: `out` outputs from the input span [in0, in0 + len),
 * taps clamped to [lo, hi) (lo < hi). */
static mt_status axis_coeffs(mt__axis *a, double in0, double len, int out, int lo, int hi, int flip, const char *name) {
  double scale = len / out, support = scale > 1.0 ? scale : 1.0, inv = 1.0 / support;
  int taps = 1, xmin;
  for (int i = 0; i < out; i++) {
    int count = window(in0 + (i + 0.5) * scale, support, inv, lo, hi, &xmin);
    if (count > taps) taps = count;
  }
  if (!grow((void **)&a->start, &a->cap_start, (size_t)out, sizeof(int)) ||
      !grow((void **)&a->w, &a->cap_w, (size_t)out * (size_t)taps, sizeof(float)))
    return mt__error(MT_ERR_MEMORY, "resample: %s: out of memory for %d x %d filter coefficients", name, out, taps);
  a->n = out;
  a->taps = taps;
  a->lo = hi;
  a->hi = lo;
  for (int i = 0; i < out; i++) {
    double centre = in0 + (i + 0.5) * scale, sum = 0;
    int count = window(centre, support, inv, lo, hi, &xmin);
    for (int k = 0; k < count; k++) sum += tri((xmin + k + 0.5 - centre) * inv);
    int start = xmin + taps > hi ? hi - taps : xmin; /* shift so every output reads `taps` pixels */
    int slot = flip ? out - 1 - i : i;
    float *w = a->w + (size_t)slot * taps;
    for (int k = 0; k < taps; k++) w[k] = 0.0f;
    if (sum > 0)
      for (int k = 0; k < count; k++) w[xmin - start + k] = (float)(tri((xmin + k + 0.5 - centre) * inv) / sum);
    else w[xmin - start] = 1.0f;
    a->start[slot] = start;
    if (start < a->lo) a->lo = start;
    if (start + taps > a->hi) a->hi = start + taps;
  }
  return MT_OK;
}

/* vertical pass for one output row: row[i] = sum_k w[k] * src[(start + k) * stride + i] over
 * n bytes (the columns the horizontal pass reads): loops over bytes, which vectorise, two taps
 * per sweep to halve the traffic through `row` */
#if defined(__x86_64__) && defined(__GNUC__) /* AVX2 where the CPU has it: twice the lanes */
__attribute__((target_clones("avx2", "default")))
#endif
static void
vpass(const uint8_t *src, size_t stride, const float *w, int taps, float *row, size_t n) {
  int k;
  if (taps & 1) {
    const float w0 = w[0];
    for (size_t i = 0; i < n; i++) row[i] = w0 * (float)src[i];
    k = 1;
  } else {
    const float w0 = w[0], w1 = w[1];
    const uint8_t *s1 = src + stride;
    for (size_t i = 0; i < n; i++) row[i] = w0 * (float)src[i] + w1 * (float)s1[i];
    k = 2;
  }
  for (; k < taps; k += 2) {
    const uint8_t *s0 = src + (size_t)k * stride, *s1 = s0 + stride;
    const float w0 = w[k], w1 = w[k + 1];
    for (size_t i = 0; i < n; i++) row[i] += w0 * (float)s0[i] + w1 * (float)s1[i];
  }
}

/* horizontal pass, any channel count; dst is channel c's plane at c * plane */
static void hpass(const mt__axis *ax, const float *row, float *dst, size_t plane, int C) {
  const int taps = ax->taps;
  for (int i = 0; i < ax->n; i++) {
    const float *p = row + (size_t)(ax->start[i] - ax->lo) * C, *w = ax->w + (size_t)i * taps;
    for (int c = 0; c < C; c++) {
      float acc = 0.0f;
      for (int k = 0; k < taps; k++) acc += w[k] * p[k * C + c];
      dst[c * plane + i] = acc;
    }
  }
}

/* horizontal pass for 3 or 4 channels: a pixel is one 4-lane vector (for RGB the fourth lane
 * is the next pixel's red, computed and dropped), each weight is stored broadcast to 4 lanes,
 * and the tap count is a constant in the common cases so the tap loop unrolls. `row` has one
 * float of padding. */
typedef float mt__v4 __attribute__((vector_size(16)));
static inline mt__v4 load4(const float *p) {
  mt__v4 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline __attribute__((always_inline)) void hpass4_k(const mt__axis *ax, const float *row, float *dst,
                                                           size_t plane, const int C, const int taps) {
  const int n = ax->n;
  const mt__v4 *w4 = (const mt__v4 *)ax->w4;
  float *d0 = dst, *d1 = dst + plane, *d2 = dst + 2 * plane, *d3 = dst + 3 * plane;
  for (int i = 0; i < n; i++) {
    const float *p = row + (size_t)(ax->start[i] - ax->lo) * C;
    const mt__v4 *w = w4 + (size_t)i * taps;
    mt__v4 acc = w[0] * load4(p);
    for (int k = 1; k < taps; k++) acc += w[k] * load4(p + (size_t)k * C);
    d0[i] = acc[0];
    d1[i] = acc[1];
    d2[i] = acc[2];
    if (C == 4) d3[i] = acc[3];
  }
}
#define MT_HPASS4_CASES(C)                                      \
  switch (ax->taps) {                                           \
    case 1: hpass4_k(ax, row, dst, plane, C, 1); break;         \
    case 2: hpass4_k(ax, row, dst, plane, C, 2); break;         \
    case 3: hpass4_k(ax, row, dst, plane, C, 3); break;         \
    case 4: hpass4_k(ax, row, dst, plane, C, 4); break;         \
    case 5: hpass4_k(ax, row, dst, plane, C, 5); break;         \
    case 6: hpass4_k(ax, row, dst, plane, C, 6); break;         \
    case 7: hpass4_k(ax, row, dst, plane, C, 7); break;         \
    default: hpass4_k(ax, row, dst, plane, C, ax->taps); break; \
  }
static void hpass3(const mt__axis *ax, const float *row, float *dst, size_t plane) { MT_HPASS4_CASES(3) }
static void hpass4(const mt__axis *ax, const float *row, float *dst, size_t plane) { MT_HPASS4_CASES(4) }

/* the weights broadcast to 4 lanes, for hpass3/hpass4 */
static int broadcast_weights(mt__axis *a) {
  size_t n = (size_t)a->n * a->taps * 4;
  if (n > a->cap_w4) { /* 16-byte aligned for the vector loads */
    float *p = aligned_alloc(16, (n * sizeof(float) + 15) / 16 * 16);
    if (!p) return 0;
    free(a->w4);
    a->w4 = p;
    a->cap_w4 = n;
  }
  for (size_t i = 0; i < n / 4; i++) a->w4[4 * i] = a->w4[4 * i + 1] = a->w4[4 * i + 2] = a->w4[4 * i + 3] = a->w[i];
  return 1;
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
  if (!(w > 0) || !(h > 0) || !isfinite(x0) || !isfinite(y0) || !isfinite(w) || !isfinite(h) || fabs(x0) > 1e9 ||
      fabs(y0) > 1e9 || w > 1e9 || h > 1e9)
    return mt__error(MT_ERR_ARG, "resample: %s: bad region x %g y %g w %g h %g", name, x0, y0, w, h);
  if (cx0 < 0) cx0 = 0;
  if (cy0 < 0) cy0 = 0;
  if (cx1 > width) cx1 = width;
  if (cy1 > height) cy1 = height;
  if (cx0 >= cx1 || cy0 >= cy1)
    return mt__error(MT_ERR_ARG, "resample: %s: empty clamp window [%d, %d) x [%d, %d) in a %d x %d image", name, cx0,
                     cx1, cy0, cy1, width, height);
  MT_TRY(axis_coeffs(&r->x, x0, w, out_w, cx0, cx1, flip, name));
  MT_TRY(axis_coeffs(&r->y, y0, h, out_h, cy0, cy1, 0, name));
  if ((channels == 3 || channels == 4) && !broadcast_weights(&r->x))
    return mt__error(MT_ERR_MEMORY, "resample: %s: out of memory for %d x %d filter coefficients", name, out_w,
                     r->x.taps);

  /* per output row: the vertical pass over the columns the row needs, straight from the
   * bytes, into one float row; then the horizontal pass from that row into the planes */
  const int C = channels, taps = r->y.taps;
  const size_t n = (size_t)(r->x.hi - r->x.lo) * C;
  if (!grow((void **)&r->rows, &r->cap_rows, n + 1, sizeof(float)))
    return mt__error(MT_ERR_MEMORY, "resample: %s: out of memory for a row of %zu values", name, n);
  r->rows[n] = 0.0f; /* the padding hpass4 may read */
  const uint8_t *base = src + (size_t)r->x.lo * C;
  const size_t plane = (size_t)out_w * out_h;
  for (int j = 0; j < out_h; j++) {
    vpass(base + (size_t)r->y.start[j] * stride, stride, r->y.w + (size_t)j * taps, taps, r->rows, n);
    float *o = dst + (size_t)j * out_w;
    if (C == 3) hpass3(&r->x, r->rows, o, plane);
    else if (C == 4) hpass4(&r->x, r->rows, o, plane);
    else hpass(&r->x, r->rows, o, plane, C);
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
  mt_status st = mt__resample(&r, (const uint8_t *)mt__data(image), (int)W, (int)H, (size_t)(W * C), (int)C, 0.0, 0.0,
                              (double)W, (double)H, 0, 0, (int)W, (int)H, ow, oh, 0, tmp, op);
  mt__resampler_free(&r);
  mt_tensor *res = NULL;
  if (st == MT_OK) {
    int64_t sizes[3] = {oh, ow, C};
    st = mt_tensor_new(&res, MT_U8, MT_CPU, image->ndim, sizes);
  }
  if (st == MT_OK) {
    uint8_t *d = mt_tensor_data(res);
    size_t plane = (size_t)ow * oh;
    for (int64_t c = 0; c < C; c++) /* planes -> pixels; weights >= 0 sum to 1, so clamping only meets rounding */
      for (size_t i = 0; i < plane; i++) {
        float v = tmp[c * plane + i];
        d[i * C + c] = (uint8_t)((v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v) + 0.5f);
      }
    *out = res;
  }
  free(tmp);
  return st;
}
