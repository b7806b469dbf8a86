/* fuzz_transform.c: libFuzzer target over the transforms: crop choice, the resampler's
 * geometry (fractional regions, clamp windows, flips, tiny and extreme shapes) and the whole
 * decode -> crop -> resample -> colour -> store path.
 *
 * Input: PARAMS bytes of parameters, then either pixels for a small synthetic image (encoded
 * as PNG or JPEG here, so every run reaches the resampler) or, in raw mode, the file's bytes.
 * What must hold, whatever the bytes:
 *  - every call returns MT_OK, or a valid status with a non-empty message;
 *  - a training crop lies inside the image with w, h >= 1;
 *  - resampled values stay within the source's range (the weights are >= 0 and sum to 1), and
 *    a transform without colour jitter stores values in that range too (uint8) or finite ones;
 *  - nothing crashes, leaks or trips ASan/UBSan.
 * No seed corpus is needed: the synthetic mode builds valid images from any bytes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/dtype.h"
#include "data/resample.h"
#include "moontorch.h"

#define PARAMS 24
#define MAX_SIDE 96

static void fail(const char *what) {
  fprintf(stderr, "fuzz_transform: %s; last error: %s\n", what, mt_last_error());
  abort();
}

static void check_error(mt_status st, const char *op) {
  if (st <= MT_OK || st > MT_ERR_FORMAT) fail(op);
  const char *m = mt_last_error();
  if (!m || !m[0]) fail("empty error message");
}

/* ---- mt__resample on a random region of a random buffer ---- */
static void fuzz_resample(const uint8_t *p, const uint8_t *px, size_t npx) {
  int W = 1 + p[0] % MAX_SIDE, H = 1 + p[1] % MAX_SIDE, C = 1 + p[2] % 4;
  int ow = 1 + p[3] % 64, oh = 1 + p[4] % 64, flip = p[5] & 1;
  /* region: offsets and sizes in eighths of a pixel, partly outside the image sometimes */
  double x0 = ((int)p[6] - 32) / 8.0, y0 = ((int)p[7] - 32) / 8.0;
  double w = (1 + p[8] * 4) / 8.0, h = (1 + p[9] * 4) / 8.0;
  int cx0 = p[10] % (W + 1) - 1, cx1 = cx0 + 1 + p[11] % (W + 2), cy0 = p[12] % (H + 1) - 1,
      cy1 = cy0 + 1 + p[13] % (H + 2);
  size_t n = (size_t)W * H * C;
  uint8_t *src = malloc(n);
  float *dst = malloc((size_t)ow * oh * C * sizeof(float));
  if (!src || !dst) fail("out of memory");
  uint8_t lo = 255, hi = 0;
  for (size_t i = 0; i < n; i++) { src[i] = npx ? px[i % npx] : (uint8_t)i; }
  /* the range of the pixels the taps may read */
  int wx0 = cx0 < 0 ? 0 : cx0, wx1 = cx1 > W ? W : cx1, wy0 = cy0 < 0 ? 0 : cy0, wy1 = cy1 > H ? H : cy1;
  for (int y = wy0; y < wy1; y++)
    for (int x = wx0; x < wx1; x++)
      for (int c = 0; c < C; c++) {
        uint8_t v = src[((size_t)y * W + x) * C + c];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
  mt__resampler r;
  memset(&r, 0, sizeof r);
  mt_status st =
      mt__resample(&r, src, W, H, (size_t)W * C, C, x0, y0, w, h, cx0, cy0, cx1, cy1, ow, oh, flip, dst, "fuzz");
  if (st != MT_OK) {
    check_error(st, "resample");
    if (wx0 < wx1 && wy0 < wy1) fail("resample refused a valid window");
  } else {
    for (size_t i = 0; i < (size_t)ow * oh * C; i++)
      if (!(dst[i] >= lo - 0.01f && dst[i] <= hi + 0.01f)) fail("resampled value outside the source's range");
  }
  mt__resampler_free(&r);
  free(src);
  free(dst);
}

/* ---- the whole transform ---- */
static double pick(uint8_t b, const double *v, int n) { return v[b % n]; }

static void fuzz_transform(const uint8_t *p, const uint8_t *rest, size_t nrest) {
  mt_transform t;
  mt_transform_defaults(&t, p[0] & 1);
  t.out_w = 1 + p[1] % 48;
  t.out_h = 1 + p[2] % 48;
  t.resize = (p[3] & 0x80) ? 1 + p[3] % 64 : t.out_w + p[3] % 32;
  static const double scales[] = {0.01, 0.08, 0.5, 1, 1.5, 1e-9};
  static const double ratios[] = {0.1, 0.75, 1, 4.0 / 3.0, 10, 1e-6, 1e6};
  t.scale_min = pick(p[4], scales, 6);
  t.scale_max = t.scale_min + pick(p[5], scales, 6);
  t.ratio_min = pick(p[6], ratios, 7);
  t.ratio_max = t.ratio_min * (1 + pick(p[7], ratios, 7));
  t.hflip = p[8] & 1;
  int jitter = (p[8] >> 1) & 1;
  if (jitter) {
    t.brightness = p[9] / 128.0;
    t.contrast = p[10] / 128.0;
    t.saturation = p[11] / 128.0;
    t.lighting = p[12] / 64.0;
  }
  t.dct_scaling = (p[8] >> 2) & 1;
  static const int dtypes[3] = {MT_U8, MT_F32, MT_F16};
  t.dtype = dtypes[p[13] % 3];
  t.nhwc = p[14] & 1;
  uint64_t seed = p[15] | (uint64_t)p[16] << 8, counter = p[17] | (uint64_t)p[18] << 8;
  int raw = (p[19] & 7) == 0;

  /* the crop on a fuzzed size */
  int W = 1 + (p[20] | (p[21] & 0x3f) << 8), H = 1 + (p[22] | (p[23] & 0x3f) << 8), x, y, w, h, flip;
  if (mt_transform_crop(&t, W, H, seed, counter, &x, &y, &w, &h, &flip) != MT_OK) fail("crop failed");
  if (t.train && (x < 0 || y < 0 || w < 1 || h < 1 || x + w > W || y + h > H)) fail("training crop outside the image");

  /* the image: the input's bytes as a file, or a small synthetic image encoded here */
  mt_tensor *file = NULL, *img = NULL;
  const void *buf = rest;
  size_t len = nrest;
  uint8_t lo = 0, hi = 255;
  int format = MT_IMAGE_PNG;
  if (!raw) {
    int iw = 1 + p[20] % MAX_SIDE, ih = 1 + p[22] % MAX_SIDE;
    int64_t sizes[3] = {ih, iw, 3};
    if (mt_tensor_new(&img, MT_U8, -1 /* CPU */, 3, sizes) != MT_OK) fail("tensor_new failed");
    uint8_t *d = mt_tensor_data(img);
    lo = 255;
    hi = 0;
    for (int64_t i = 0; i < (int64_t)iw * ih * 3; i++) {
      d[i] = nrest ? rest[i % nrest] : (uint8_t)(i * 7);
      lo = d[i] < lo ? d[i] : lo;
      hi = d[i] > hi ? d[i] : hi;
    }
    format = (p[19] & 8) ? MT_IMAGE_JPEG : MT_IMAGE_PNG;
    if (mt_image_encode(&file, img, format, 90) != MT_OK) fail("encoding the synthetic image failed");
    buf = mt_tensor_data(file);
    len = (size_t)mt_tensor_numel(file);
    if (format == MT_IMAGE_JPEG) lo = 0, hi = 255; /* JPEG moves values */
  }
  size_t n = (size_t)t.out_w * t.out_h * 3;
  void *dst = malloc(n * 4), *scratch = NULL;
  if (!dst) fail("out of memory");
  mt_status st = mt_transform_apply(&t, buf, len, "fuzz.img", seed, counter, dst, &scratch);
  if (st != MT_OK) {
    check_error(st, "transform_apply");
    if (!raw) fail("transform of a valid image failed");
    if (!strstr(mt_last_error(), "fuzz.img")) fail("the error does not name the sample");
  } else if (!jitter) {
    for (size_t i = 0; i < n; i++) {
      double v;
      if (t.dtype == MT_U8) v = ((uint8_t *)dst)[i];
      else if (t.dtype == MT_F32) v = ((float *)dst)[i];
      else v = mt_half_to_float(((uint16_t *)dst)[i]);
      if (!isfinite(v)) fail("non-finite output");
      if (t.dtype == MT_U8 && (v < lo || v > hi)) fail("uint8 output outside the source's range");
    }
  }
  /* a second sample reuses the scratch space */
  st = mt_transform_apply(&t, buf, len, "fuzz.img", seed, counter + 1, dst, &scratch);
  if (st != MT_OK) check_error(st, "transform_apply (again)");
  mt_transform_scratch_free(scratch);
  free(dst);

  if (img) { /* the public resize on the synthetic image */
    mt_tensor *small = NULL;
    st = mt_image_resize(&small, img, t.out_w, t.out_h);
    if (st != MT_OK) fail("image_resize failed");
    mt_tensor_release(small);
  }
  mt_tensor_release(img);
  mt_tensor_release(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < PARAMS + 1) return 0;
  if (data[0] & 0x80) fuzz_resample(data + 1, data + 1 + PARAMS, size - 1 - PARAMS);
  else fuzz_transform(data + 1, data + 1 + PARAMS, size - 1 - PARAMS);
  return 0;
}
