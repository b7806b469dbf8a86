/* fuzz_image.c: libFuzzer target over the image decoders: header probe, whole decode at a DCT
 * scale, and region decode (mt__image_decode_region, the transforms' hot path).
 *
 * Input: PARAMS bytes of parameters (scale, region as fractions of the image, minimum output
 * size, scaling allowed), then the file's bytes. What must hold, whatever the bytes:
 *  - every call returns MT_OK, or a valid status with a non-empty message and no tensor;
 *  - a probed size is positive; a decode has the promised size (ceil(size / d) for JPEG);
 *  - a region decode keeps its region inside the buffer, at the largest allowed denominator,
 *    and where the whole decode at that scale also succeeds, the region's pixels are the same;
 *  - a decoded image re-encoded as PNG decodes to the same pixels;
 *  - nothing crashes, leaks or trips ASan/UBSan.
 * Images over MAX_PIXELS are probed only (the limits of the decoders are far larger, and a few
 * header bytes can declare them: the fuzzer would spend its time in memset).
 * Seed corpus: the test images with PARAMS random bytes in front, e.g.
 *   /usr/bin/python3 spec/fixtures/gen_images.py make /tmp/img 1 && mkdir -p corpus && cd /tmp/img &&
 *   for f in $(ls | grep -E 'jpg$|png$'); do (head -c 12 /dev/urandom; cat $f) > $OLDPWD/corpus/$f; done
 *   cd - && ./build-fuzz/fuzz_image -max_len=65536 -max_total_time=120 corpus */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "moontorch.h"
#include "data/image.h"

#define PARAMS 12
#define MAX_PIXELS (1 << 20)

static void fail(const char *what) {
  fprintf(stderr, "fuzz_image: %s; last error: %s\n", what, mt_last_error());
  abort();
}

static void check_error(mt_status st, const char *op) {
  if (st <= MT_OK || st > MT_ERR_FORMAT) fail(op);
  const char *m = mt_last_error();
  if (!m || !m[0]) fail("empty error message");
}

static unsigned frac(const uint8_t *p, unsigned n) { /* (p[0..1] / 65536) * n, in [0, n) */
  return (unsigned)(((uint32_t)(p[0] << 8 | p[1]) * (uint64_t)n) >> 16);
}

/* the region decode against the whole decode `full` at the same denominator */
static void compare_region(const mt__decoded *d, const mt_tensor *full, int rx, int ry) {
  int64_t fh = mt_tensor_size(full, 0), fw = mt_tensor_size(full, 1);
  double xo = rx / (double)d->scale_denom - d->rx, yo = ry / (double)d->scale_denom - d->ry;
  int64_t xoff = (int64_t)floor(xo + 0.5), yoff = (int64_t)floor(yo + 0.5);
  if (fabs(xo - xoff) > 1e-6 || fabs(yo - yoff) > 1e-6) fail("region offset is not a whole pixel");
  int i0 = (int)floor(d->ry), i1 = (int)ceil(d->ry + d->rh), j0 = (int)floor(d->rx), j1 = (int)ceil(d->rx + d->rw);
  if (yoff + i1 > fh || xoff + j1 > fw || xoff < 0 || yoff < 0) fail("region buffer outside the full image");
  const uint8_t *fp = mt_tensor_data(full);
  for (int i = i0; i < i1; i++)
    if (memcmp(d->pixels + ((size_t)i * d->width + j0) * 3, fp + ((size_t)(yoff + i) * fw + xoff + j0) * 3,
               (size_t)(j1 - j0) * 3) != 0)
      fail("region pixels differ from the whole decode");
}

static void png_round_trip(const mt_tensor *img) {
  mt_tensor *bytes = NULL, *back = NULL;
  if (mt_image_encode(&bytes, img, MT_IMAGE_PNG, 90) != MT_OK) fail("encoding a decoded image failed");
  if (mt_image_decode(&back, mt_tensor_data(bytes), (size_t)mt_tensor_numel(bytes), 1) != MT_OK)
    fail("decoding our own PNG failed");
  if (mt_tensor_numel(back) != mt_tensor_numel(img) ||
      memcmp(mt_tensor_data(back), mt_tensor_data(img), (size_t)mt_tensor_numel(img)) != 0)
    fail("PNG round trip changed the pixels");
  mt_tensor_release(bytes);
  mt_tensor_release(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < PARAMS) return 0;
  const uint8_t *prm = data, *buf = data + PARAMS;
  size_t len = size - PARAMS;
  static const int denoms[4] = {1, 2, 4, 8};

  int fmt = -1, w = -1, h = -1, c = -1;
  mt_status st = mt__image_probe(buf, len, "fuzz", &fmt, &w, &h, &c);
  if (st != MT_OK) {
    check_error(st, "probe");
    mt_tensor *t = (mt_tensor *)1;
    st = mt_image_decode(&t, buf, len, 1);
    if (st == MT_OK || t != NULL) fail("decode succeeded where the probe failed");
    check_error(st, "decode after a failed probe");
    return 0;
  }
  if ((fmt != MT_IMAGE_JPEG && fmt != MT_IMAGE_PNG) || w <= 0 || h <= 0 || c < 1 || c > 4) fail("bad probe result");
  if ((int64_t)w * h > MAX_PIXELS) return 0;

  /* whole image at a DCT scale */
  int d = denoms[prm[0] & 3];
  int dd = fmt == MT_IMAGE_JPEG ? d : 1;
  mt_tensor *full = NULL;
  st = mt_image_decode(&full, buf, len, d);
  if (st != MT_OK) {
    if (full) fail("failed decode returned a tensor");
    check_error(st, "decode");
  } else {
    if (mt_tensor_ndim(full) != 3 || mt_tensor_size(full, 0) != (h + dd - 1) / dd ||
        mt_tensor_size(full, 1) != (w + dd - 1) / dd || mt_tensor_size(full, 2) != 3)
      fail("decoded size is not ceil(size / d)");
    if ((int64_t)w * h <= (1 << 16)) png_round_trip(full);
  }

  /* a region, twice into the same buffer (the second reuses it) */
  mt__decoded dec;
  memset(&dec, 0, sizeof dec);
  for (int pass = 0; pass < 2; pass++) {
    const uint8_t *p = prm + 1 + pass * 5;
    int rw = 1 + (int)frac(p, (unsigned)w), rh = 1 + (int)frac(p + 2, (unsigned)h);
    int rx = (int)frac(p + 1, (unsigned)(w - rw + 1)), ry = (int)frac(p + 3, (unsigned)(h - rh + 1));
    int min_w = 1 + (p[4] & 15) * 8, min_h = 1 + (p[4] >> 4) * 8, scaling = prm[0] >> 7;
    int invalid = pass == 1 && (prm[11] & 1);
    if (invalid) rx = w; /* just past the right edge */
    st = mt__image_decode_region(buf, len, "fuzz", rx, ry, rw, rh, min_w, min_h, scaling, &dec);
    if (st != MT_OK) {
      check_error(st, "decode_region");
      continue;
    }
    if (invalid) fail("a region outside the image decoded");
    int want = 1;
    if (scaling && fmt == MT_IMAGE_JPEG)
      for (int k = 8; k > 1; k /= 2)
        if (rw >= min_w * k && rh >= min_h * k) {
          want = k;
          break;
        }
    if (dec.scale_denom != want) fail("region decode chose the wrong denominator");
    if (dec.rx < 0 || dec.ry < 0 || dec.rx + dec.rw > dec.width + 1e-9 || dec.ry + dec.rh > dec.height + 1e-9 ||
        (size_t)dec.width * dec.height * 3 > dec.capacity)
      fail("region outside the decoded buffer");
    if (full && want == dd) compare_region(&dec, full, rx, ry);
  }
  mt__decoded_free(&dec);
  mt_tensor_release(full);
  return 0;
}
