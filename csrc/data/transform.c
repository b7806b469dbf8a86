/* transform.c: per-sample transforms: crop choice, decode of just that region, one resampling
 * pass, colour augmentation and the output layout (see the data section of moontorch.h).
 *
 * Random draws. Sample (seed, counter) owns the Philox counters counter * 16 + k, k < 16; each
 * counter gives four 32-bit words, read as two 53-bit uniforms (words 0-1 and 2-3; the flip
 * alone is mt_philox_uniform, word 0 on Torch7's 2^-32 grid) or one normal (mt_philox_normal,
 * words 2-3):
 *   k = 0..9   RandomResizedCrop try k: area fraction (0-1), log aspect ratio (2-3)
 *   k = 10     crop offsets: row (0-1), column (2-3)
 *   k = 11     flip (0-1)
 *   k = 12     brightness (0-1), contrast (2-3)
 *   k = 13     saturation (0-1), lighting alpha 1 (normal, 2-3)
 *   k = 14, 15 lighting alphas 2 and 3 (normal)
 * Every effect has its own slots, so turning one on leaves the others' draws unchanged.
 *
 * Colour. Brightness, contrast, saturation and lighting are affine maps of a pixel's RGB (the
 * contrast's grey mean is the mean of the image, itself an affine function of the resampled
 * image's mean), and so is the normalisation: they compose into one 3x3 matrix and offset,
 * applied in the single output pass. This is fb.resnet.torch's arithmetic exactly, without
 * clamping between the steps as there. fb.resnet.torch applies the three jitter effects in a
 * random order; they commute (the grey weights sum to 1, so brightness and contrast scale or
 * shift grey alike, and saturation keeps the grey mean), so the order needs no draw. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/dtype.h"
#include "../core/error.h"
#include "../core/half_bulk.h"
#include "../core/philox.h"
#include "../core/tensor.h"
#include "image.h"
#include "resample.h"

#define MT_TRANSFORM_MAX_SIZE 65536

typedef struct mt__transform_scratch {
  mt__decoded dec;
  mt__resampler rs;
  float *img; /* 3 planes of out_h x out_w, values in [0, 255] */
  size_t cap_img;
} mt__transform_scratch;

void mt_transform_defaults(mt_transform *t, int train) {
  if (!t) return;
  memset(t, 0, sizeof *t);
  t->train = train ? 1 : 0;
  t->out_w = t->out_h = 224;
  t->resize = 256;
  t->scale_min = 0.08;
  t->scale_max = 1.0;
  t->ratio_min = 3.0 / 4.0;
  t->ratio_max = 4.0 / 3.0;
  t->hflip = 1;
  t->dct_scaling = 1;
  const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
  memcpy(t->mean, mean, sizeof mean);
  memcpy(t->std, std, sizeof std);
  t->dtype = MT_F32;
  t->nhwc = 0;
}

static mt_status check_transform(const mt_transform *t, const char *op) {
  if (!t) return mt__error(MT_ERR_ARG, "%s: transform is NULL", op);
  if (t->out_w < 1 || t->out_h < 1 || t->out_w > MT_TRANSFORM_MAX_SIZE || t->out_h > MT_TRANSFORM_MAX_SIZE)
    return mt__error(MT_ERR_ARG, "%s: output size %d x %d (width x height) outside 1..%d", op, t->out_w, t->out_h,
                     MT_TRANSFORM_MAX_SIZE);
  if (t->train) {
    if (!(t->scale_min > 0) || !(t->scale_min <= t->scale_max) || !isfinite(t->scale_max))
      return mt__error(MT_ERR_ARG, "%s: scale range [%g, %g] must satisfy 0 < min <= max (finite)", op, t->scale_min,
                       t->scale_max);
    if (!(t->ratio_min > 0) || !(t->ratio_min <= t->ratio_max) || !isfinite(t->ratio_max))
      return mt__error(MT_ERR_ARG, "%s: ratio range [%g, %g] must satisfy 0 < min <= max (finite)", op, t->ratio_min,
                       t->ratio_max);
    const double s[4] = {t->brightness, t->contrast, t->saturation, t->lighting};
    const char *names[4] = {"brightness", "contrast", "saturation", "lighting"};
    for (int i = 0; i < 4; i++)
      if (!(s[i] >= 0) || !isfinite(s[i]))
        return mt__error(MT_ERR_ARG, "%s: %s strength %g must be finite and >= 0", op, names[i], s[i]);
  } else if (t->resize < 1 || t->resize > MT_TRANSFORM_MAX_SIZE) {
    return mt__error(MT_ERR_ARG, "%s: resize %d outside 1..%d", op, t->resize, MT_TRANSFORM_MAX_SIZE);
  }
  for (int c = 0; c < 3; c++)
    if (!isfinite(t->mean[c]) || !isfinite(t->std[c]) || t->std[c] == 0)
      return mt__error(MT_ERR_ARG, "%s: mean[%d] = %g, std[%d] = %g: need finite values and std != 0", op, c,
                       t->mean[c], c, t->std[c]);
  if (t->dtype != MT_U8 && t->dtype != MT_F32 && t->dtype != MT_F16)
    return mt__error(MT_ERR_DTYPE, "%s: output dtype %s is not uint8, float32 or float16", op,
                     mt_dtype_name(t->dtype) ? mt_dtype_name(t->dtype) : "(invalid)");
  return MT_OK;
}

/* ---- random draws ---- */
static inline double u53(uint32_t hi, uint32_t lo) { /* a uniform in [0, 1) from 53 bits of two words */
  uint64_t bits = ((uint64_t)hi << 21) ^ (uint64_t)(lo >> 11);
  return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* Python's round(): half to even */
static double round_even(double v) {
  double r = round(v);
  if (fabs(v - trunc(v)) == 0.5) r = 2.0 * round(v / 2.0);
  return r;
}

/* torchvision 0.14 RandomResizedCrop.get_params */
static void train_crop(const mt_transform *t, int W, int H, uint64_t seed, uint64_t base, int *x, int *y, int *w,
                       int *h) {
  double area = (double)W * H, lr0 = log(t->ratio_min), lr1 = log(t->ratio_max);
  for (int k = 0; k < 10; k++) {
    mt_philox_out o = mt_philox(seed, base + k);
    double target = area * (t->scale_min + (t->scale_max - t->scale_min) * u53(o.v[0], o.v[1]));
    double aspect = exp(lr0 + (lr1 - lr0) * u53(o.v[2], o.v[3]));
    double wd = round_even(sqrt(target * aspect)), hd = round_even(sqrt(target / aspect));
    if (wd > 0 && wd <= W && hd > 0 && hd <= H) {
      mt_philox_out off = mt_philox(seed, base + 10);
      int cw = (int)wd, ch = (int)hd;
      int oy = (int)(u53(off.v[0], off.v[1]) * (H - ch + 1)), ox = (int)(u53(off.v[2], off.v[3]) * (W - cw + 1));
      *x = ox;
      *y = oy;
      *w = cw;
      *h = ch;
      return;
    }
  }
  /* centre crop, the aspect ratio clamped to the range */
  double in_ratio = (double)W / H, wd = W, hd = H;
  if (in_ratio < t->ratio_min) hd = round_even(W / t->ratio_min);
  else if (in_ratio > t->ratio_max) wd = round_even(H * t->ratio_max);
  int cw = wd < 1 ? 1 : wd > W ? W : (int)wd, ch = hd < 1 ? 1 : hd > H ? H : (int)hd;
  *x = (W - cw) / 2;
  *y = (H - ch) / 2;
  *w = cw;
  *h = ch;
}

/* torchvision Resize(resize) + CenterCrop(out) as one region in source pixels: the resize
 * scales each axis by W / new_w (H / new_h), so output pixel i of the crop is resized pixel
 * left + i, centred at (left + i + 0.5) * W / new_w in the source. A crop larger than the
 * resized image (resize < out size) reaches outside it: the edge pixels repeat there, where
 * torchvision's CenterCrop pads with zeros. */
static void eval_region(const mt_transform *t, int W, int H, double *fx, double *fy, double *fw, double *fh) {
  double nw, nh;
  if (W <= H) {
    nw = t->resize;
    nh = floor((double)t->resize * H / W);
  } else {
    nh = t->resize;
    nw = floor((double)t->resize * W / H);
  }
  if (nw < 1) nw = 1;
  if (nh < 1) nh = 1;
  double top = round_even((nh - t->out_h) / 2.0), left = round_even((nw - t->out_w) / 2.0);
  double sx = W / nw, sy = H / nh;
  *fx = left * sx;
  *fy = top * sy;
  *fw = t->out_w * sx;
  *fh = t->out_h * sy;
}

mt_status mt_transform_crop(const mt_transform *t, int width, int height, uint64_t seed, uint64_t counter, int *x,
                            int *y, int *w, int *h, int *flip) {
  const char *op = "transform_crop";
  MT_TRY(check_transform(t, op));
  if (!x || !y || !w || !h || !flip) return mt__error(MT_ERR_ARG, "%s: NULL output pointer", op);
  if (width < 1 || height < 1) return mt__error(MT_ERR_ARG, "%s: image size %d x %d is empty", op, width, height);
  uint64_t base = counter * 16;
  if (t->train) {
    train_crop(t, width, height, seed, base, x, y, w, h);
    *flip = t->hflip && mt_philox_uniform(seed, base + 11) < 0.5;
  } else {
    double fx, fy, fw, fh;
    eval_region(t, width, height, &fx, &fy, &fw, &fh);
    *x = (int)floor(fx + 0.5);
    *y = (int)floor(fy + 0.5);
    *w = (int)floor(fw + 0.5);
    *h = (int)floor(fh + 0.5);
    *flip = 0;
  }
  return MT_OK;
}

/* ---- colour ---- */
typedef struct affine {
  double m[3][3], c[3];
} affine;

static void affine_apply(affine *a, const double s[3][3], const double c[3]) { /* a := s a + c */
  affine r;
  for (int i = 0; i < 3; i++) {
    r.c[i] = c[i];
    for (int j = 0; j < 3; j++) {
      r.m[i][j] = 0;
      for (int k = 0; k < 3; k++) r.m[i][j] += s[i][k] * a->m[k][j];
      r.c[i] += s[i][j] * a->c[j];
    }
  }
  *a = r;
}

static const double grey[3] = {0.299, 0.587, 0.114};

/* sum of n floats: eight float lanes (independent chains, which vectorise), each chunk of
 * 1024 values added into a double so that 50k values do not drift */
static double plane_sum(const float *p, size_t n) {
  double total = 0;
  for (size_t p0 = 0; p0 < n; p0 += 1024) {
    size_t m = n - p0 < 1024 ? n - p0 : 1024, i = 0;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (; i + 8 <= m; i += 8)
      for (int l = 0; l < 8; l++) acc[l] += p[p0 + i + l];
    for (; i < m; i++) acc[0] += p[p0 + i];
    for (int l = 0; l < 8; l++) total += acc[l];
  }
  return total;
}

/* the jitter and lighting of fb.resnet.torch as one affine map of [0, 255] RGB values */
static void colour_affine(const mt_transform *t, uint64_t seed, uint64_t base, const float *img, size_t npix,
                          affine *a) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < 3; i++) a->m[i][i] = 1;
  if (!t->train) return;
  mt_philox_out o12 = mt_philox(seed, base + 12), o13 = mt_philox(seed, base + 13);
  const double alpha[3] = {1 + t->brightness * (2 * u53(o12.v[0], o12.v[1]) - 1),
                           1 + t->contrast * (2 * u53(o12.v[2], o12.v[3]) - 1),
                           1 + t->saturation * (2 * u53(o13.v[0], o13.v[1]) - 1)};
  const double strength[3] = {t->brightness, t->contrast, t->saturation};
  double mean[3] = {0, 0, 0};
  if (t->contrast > 0) { /* the resampled image's mean, in double: 50k floats would drift */
    for (int c = 0; c < 3; c++) mean[c] = plane_sum(img + c * npix, npix) / (double)npix;
  }
  for (int e = 0; e < 3; e++) { /* any order gives the same map */
    if (strength[e] == 0) continue;
    double al = alpha[e], m[3][3] = {{0}}, c[3] = {0, 0, 0};
    if (e == 0) { /* brightness: blend with black */
      for (int i = 0; i < 3; i++) m[i][i] = al;
    } else if (e == 1) { /* contrast: blend with the mean grey of the current image */
      double g = 0;
      for (int i = 0; i < 3; i++) {
        double cur = a->c[i];
        for (int j = 0; j < 3; j++) cur += a->m[i][j] * mean[j];
        g += grey[i] * cur;
      }
      for (int i = 0; i < 3; i++) {
        m[i][i] = al;
        c[i] = (1 - al) * g;
      }
    } else { /* saturation: blend with the pixel's grey */
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) m[i][j] = (i == j ? al : 0) + (1 - al) * grey[j];
    }
    affine_apply(a, m, c);
  }
  if (t->lighting > 0) { /* PCA lighting: add eigvec * (alpha .* eigval), on [0, 1] values */
    static const double eigval[3] = {0.2175, 0.0188, 0.0045};
    static const double eigvec[3][3] = {
        {-0.5675, 0.7192, 0.4009}, {-0.5808, -0.0045, -0.8140}, {-0.5836, -0.6948, 0.4203}};
    const double la[3] = {t->lighting * mt_philox_normal(seed, base + 13),
                          t->lighting * mt_philox_normal(seed, base + 14),
                          t->lighting * mt_philox_normal(seed, base + 15)};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) a->c[i] += 255.0 * eigvec[i][j] * la[j] * eigval[j];
  }
}

/* ---- output ---- */
#define MT_CHUNK 512

#ifdef __SSE2__
#include <emmintrin.h>
#endif
static inline uint8_t to_u8(float v) { /* clamp, then round half up */
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return (uint8_t)(int)(v + 0.5f);
}

/* to_u8 over n values; with SSE2 sixteen at a time (the compiler does not vectorise the
 * clamps itself: under the default -ftrapping-math the compares might trap) */
static void to_u8_n(uint8_t *restrict d, const float *restrict s, size_t n) {
  size_t i = 0;
#ifdef __SSE2__
  const __m128 lo = _mm_setzero_ps(), hi = _mm_set1_ps(255.0f), half = _mm_set1_ps(0.5f);
#define MT_U8_4(j) _mm_cvttps_epi32(_mm_add_ps(_mm_min_ps(_mm_max_ps(_mm_loadu_ps(s + i + (j)), lo), hi), half))
  for (; i + 16 <= n; i += 16) { /* maxps(NaN, 0) is 0, as in to_u8 */
    __m128i a = MT_U8_4(0), b = MT_U8_4(4), c = MT_U8_4(8), e = MT_U8_4(12);
    _mm_storeu_si128((__m128i *)(d + i), _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, e)));
  }
#undef MT_U8_4
#endif
  for (; i < n; i++) d[i] = to_u8(s[i]);
}

/* the store loops take restrict pointers: without the promise the compiler does not
 * vectorise them */
static void affine_plane(float *restrict o, const float *restrict R, const float *restrict G, const float *restrict B,
                         const float k[4], size_t m) {
  const float k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3];
  for (size_t i = 0; i < m; i++) o[i] = k0 * R[i] + k1 * G[i] + k2 * B[i] + k3;
}
/* planes -> pixel-interleaved (NHWC), one body for the three element sizes */
#define INTERLEAVE(N, T)                                                                                               \
  static void interleave_##N(T *restrict d, const T *restrict r, const T *restrict g, const T *restrict b, size_t m) { \
    for (size_t i = 0; i < m; i++) {                                                                                   \
      d[3 * i] = r[i];                                                                                                 \
      d[3 * i + 1] = g[i];                                                                                             \
      d[3 * i + 2] = b[i];                                                                                             \
    }                                                                                                                  \
  }
INTERLEAVE(u8, uint8_t)
INTERLEAVE(f32, float)
INTERLEAVE(u16, uint16_t)
#undef INTERLEAVE

/* y = A x + b per pixel of the planar image, stored as t->dtype in t's layout. Chunks of
 * MT_CHUNK pixels: the affine map runs over planes (vectorised), then one store pass. */
static void write_output(const mt_transform *t, const float *img, size_t npix, const affine *a, void *dst) {
  /* float output: (x / 255 - mean) / std after the colour map; uint8: the colour map only */
  float k[3][4];
  for (int i = 0; i < 3; i++) {
    double s = t->dtype == MT_U8 ? 1.0 : 1.0 / (255.0 * t->std[i]),
           off = t->dtype == MT_U8 ? 0 : t->mean[i] / t->std[i];
    for (int j = 0; j < 3; j++) k[i][j] = (float)(s * a->m[i][j]);
    k[i][3] = (float)(s * a->c[i] - off);
  }
  const int nhwc = t->nhwc != 0;
  float buf[3][MT_CHUNK];
  uint16_t hbuf[3][MT_CHUNK];
  uint8_t bbuf[3][MT_CHUNK];
  for (size_t p0 = 0; p0 < npix; p0 += MT_CHUNK) {
    const size_t m = npix - p0 < MT_CHUNK ? npix - p0 : MT_CHUNK;
    const float *R = img + p0, *G = img + npix + p0, *B = img + 2 * npix + p0;
    for (int c = 0; c < 3; c++) /* float NCHW goes straight to its plane */
      affine_plane(t->dtype == MT_F32 && !nhwc ? (float *)dst + c * npix + p0 : buf[c], R, G, B, k[c], m);
    if (t->dtype == MT_F32) {
      if (nhwc) interleave_f32((float *)dst + 3 * p0, buf[0], buf[1], buf[2], m);
    } else if (t->dtype == MT_U8) {
      uint8_t *d = dst;
      if (nhwc) {
        for (int c = 0; c < 3; c++) to_u8_n(bbuf[c], buf[c], m);
        interleave_u8(d + 3 * p0, bbuf[0], bbuf[1], bbuf[2], m);
      } else {
        for (int c = 0; c < 3; c++) to_u8_n(d + c * npix + p0, buf[c], m);
      }
    } else {
      uint16_t *d = dst;
      if (nhwc) {
        for (int c = 0; c < 3; c++) mt__float_to_half_n(hbuf[c], buf[c], m);
        interleave_u16(d + 3 * p0, hbuf[0], hbuf[1], hbuf[2], m);
      } else {
        for (int c = 0; c < 3; c++) mt__float_to_half_n(d + c * npix + p0, buf[c], m);
      }
    }
  }
}

/* ---- apply ---- */
mt_status mt_transform_apply(const mt_transform *t, const void *buf, size_t len, const char *name, uint64_t seed,
                             uint64_t counter, void *dst, void **scratch) {
  const char *op = "transform";
  if (!name) name = "image";
  MT_TRY(check_transform(t, op));
  if (!buf || !dst || !scratch) return mt__error(MT_ERR_ARG, "%s: %s: NULL buffer, destination or scratch", op, name);
  int format, W, H, channels;
  MT_TRY(mt__image_probe(buf, len, name, &format, &W, &H, &channels));
  if (W < 1 || H < 1) return mt__error(MT_ERR_FORMAT, "%s: %s: image is %d x %d", op, name, W, H);
  mt__transform_scratch *s = *scratch;
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s) return mt__error(MT_ERR_MEMORY, "%s: %s: out of memory for the scratch space", op, name);
    *scratch = s;
  }

  /* the region to resample (fx, fy, fw, fh), the window its filter taps stay in, and the
   * decoded part: training crops then resizes, so taps stay in the crop; evaluation resizes
   * then crops, so taps may reach the neighbouring pixels and those are decoded too */
  uint64_t base = counter * 16;
  double fx, fy, fw, fh;
  int flip = 0, wx0, wy0, wx1, wy1, X0, Y0, X1, Y1, min_w = t->out_w, min_h = t->out_h;
  if (t->train) {
    int x, y, w, h;
    train_crop(t, W, H, seed, base, &x, &y, &w, &h);
    flip = t->hflip && mt_philox_uniform(seed, base + 11) < 0.5;
    fx = X0 = wx0 = x;
    fy = Y0 = wy0 = y;
    fw = w;
    fh = h;
    X1 = wx1 = x + w;
    Y1 = wy1 = y + h;
  } else {
    eval_region(t, W, H, &fx, &fy, &fw, &fh);
    wx0 = wy0 = 0;
    wx1 = W;
    wy1 = H;
    double sx = fw / t->out_w, sy = fh / t->out_h;
    double mx = (sx > 1 ? sx : 1) + 1, my = (sy > 1 ? sy : 1) + 1;
    double a0 = floor(fx - mx), a1 = ceil(fx + fw + mx), b0 = floor(fy - my), b1 = ceil(fy + fh + my);
    X0 = a0 < 0 ? 0 : (int)a0;
    Y0 = b0 < 0 ? 0 : (int)b0;
    X1 = a1 > W ? W : (int)a1;
    Y1 = b1 > H ? H : (int)b1;
    /* keep the crop (not the widened part) at least out_w x out_h after DCT scaling */
    min_w = (int)ceil(t->out_w * (X1 - X0) / fw - 1e-9);
    min_h = (int)ceil(t->out_h * (Y1 - Y0) / fh - 1e-9);
    if (min_w < 1) min_w = 1;
    if (min_h < 1) min_h = 1;
  }
  mt__decoded *d = &s->dec;
  MT_TRY(mt__image_decode_region(buf, len, name, X0, Y0, X1 - X0, Y1 - Y0, min_w, min_h, t->dct_scaling != 0, d));
  if (!d->pixels || d->width < 1 || d->height < 1 || !(d->rw > 0) || !(d->rh > 0))
    return mt__error(MT_ERR_INTERNAL, "%s: %s: the decoder returned an empty %d x %d buffer", op, name, d->width,
                     d->height);

  /* source pixels -> decoded-buffer pixels (DCT scaling and partial decoding) */
  double kx = d->rw / (X1 - X0), ky = d->rh / (Y1 - Y0);
  double bx = d->rx + (fx - X0) * kx, by = d->ry + (fy - Y0) * ky;
  int cx0 = (int)floor(d->rx + (wx0 - X0) * kx + 0.5), cx1 = (int)ceil(d->rx + (wx1 - X0) * kx - 0.5);
  int cy0 = (int)floor(d->ry + (wy0 - Y0) * ky + 0.5), cy1 = (int)ceil(d->ry + (wy1 - Y0) * ky - 0.5);
  if (cx1 <= cx0) cx1 = cx0 + 1;
  if (cy1 <= cy0) cy1 = cy0 + 1;

  size_t npix = (size_t)t->out_w * (size_t)t->out_h;
  if (npix * 3 > s->cap_img) {
    float *p = malloc(npix * 3 * sizeof(float));
    if (!p) return mt__error(MT_ERR_MEMORY, "%s: %s: out of memory for a %d x %d image", op, name, t->out_w, t->out_h);
    free(s->img);
    s->img = p;
    s->cap_img = npix * 3;
  }
  MT_TRY(mt__resample(&s->rs, d->pixels, d->width, d->height, (size_t)d->width * 3, 3, bx, by, fw * kx, fh * ky, cx0,
                      cy0, cx1, cy1, t->out_w, t->out_h, flip, s->img, name));
  affine a;
  colour_affine(t, seed, base, s->img, npix, &a);
  write_output(t, s->img, npix, &a, dst);
  return MT_OK;
}

void mt_transform_scratch_free(void *scratch) {
  mt__transform_scratch *s = scratch;
  if (!s) return;
  mt__decoded_free(&s->dec);
  mt__resampler_free(&s->rs);
  free(s->img);
  free(s);
}

mt_status mt_transform_image(mt_tensor *out, const mt_transform *t, const mt_tensor *bytes, uint64_t seed,
                             uint64_t counter) {
  const char *op = "transform_image";
  MT_CHECK_TENSOR(out, op, "out");
  MT_CHECK_TENSOR(bytes, op, "bytes");
  MT_TRY(check_transform(t, op));
  char sb[64];
  if (bytes->dtype != MT_U8 || bytes->device != MT_CPU || !mt__is_contiguous(bytes))
    return mt__error(MT_ERR_ARG, "%s: the encoded bytes must be a contiguous CPU uint8 tensor, got %s %s", op,
                     mt_dtype_name(bytes->dtype), mt__shape_str(bytes, sb, sizeof sb));
  int64_t n = mt__numel(bytes);
  int64_t sizes[3] = {3, t->out_h, t->out_w};
  if (t->nhwc) {
    sizes[0] = t->out_h;
    sizes[1] = t->out_w;
    sizes[2] = 3;
  }
  MT_TRY(mt__prepare_out(out, (mt_dtype)t->dtype, MT_CPU, 3, sizes, op));
  mt_tensor *target = out;
  if (!mt__is_contiguous(out)) MT_TRY(mt_tensor_new(&target, t->dtype, MT_CPU, 3, sizes));
  void *scratch = NULL;
  const void *src = n > 0 ? (const void *)mt__data(bytes) : (const void *)"";
  mt_status st = mt_transform_apply(t, src, (size_t)n, "<bytes>", seed, counter, mt__data(target), &scratch);
  mt_transform_scratch_free(scratch);
  if (st == MT_OK && target != out) st = mt_copy(out, target);
  if (target != out) mt_tensor_release(target);
  return st;
}
