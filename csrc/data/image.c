/* image.c: format detection and the public image API. The format comes from the magic bytes
 * (a PNG saved as .jpg still decodes); the codecs live in image_jpeg.c and image_png.c.
 * Everything is reentrant: per-call state is on the stack, reused pixels live in the caller's
 * mt__decoded. */
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"
#include "../core/tensor.h"
#include "image_codec.h"

static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};

static int sniff(const void *buf, size_t len) {
  const uint8_t *p = buf;
  if (len >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return MT_IMAGE_JPEG;
  if (len >= 8 && memcmp(p, png_magic, 8) == 0) return MT_IMAGE_PNG;
  return MT_IMAGE_UNKNOWN;
}

/* the reason an unknown buffer is unknown, with its first bytes to help spot e.g. HTML or GIF */
static mt_status unknown_format(const void *buf, size_t len, const char *name) {
  if (!buf || len == 0) return mt__error(MT_ERR_FORMAT, "image %s: empty buffer (0 bytes)", name);
  const uint8_t *p = buf;
  char hex[3 * 8 + 1] = "";
  size_t n = len < 8 ? len : 8;
  for (size_t i = 0; i < n; i++) {
    static const char digits[] = "0123456789abcdef";
    hex[3 * i] = digits[p[i] >> 4];
    hex[3 * i + 1] = digits[p[i] & 15];
    hex[3 * i + 2] = i + 1 < n ? ' ' : '\0';
  }
  return mt__error(MT_ERR_FORMAT, "image %s: not a JPEG or PNG file (%zu bytes, starting %s)", name, len, hex);
}

mt_status mt__image_check_size(const char *name, const char *format, uint64_t width, uint64_t height) {
  if (width == 0 || height == 0)
    return mt__error(MT_ERR_FORMAT, "image %s: %s declares an empty size %llux%llu", name, format,
                     (unsigned long long)width, (unsigned long long)height);
  if (width > MT_IMAGE_MAX_SIDE || height > MT_IMAGE_MAX_SIDE || width * height > MT_IMAGE_MAX_PIXELS)
    return mt__error(MT_ERR_FORMAT,
                     "image %s: %s declares %llux%llu pixels, more than this decoder accepts (%d per side, "
                     "%llu in all)",
                     name, format, (unsigned long long)width, (unsigned long long)height, MT_IMAGE_MAX_SIDE,
                     (unsigned long long)MT_IMAGE_MAX_PIXELS);
  return MT_OK;
}

mt_status mt__decoded_reserve(mt__decoded *d, size_t n, const char *name) {
  if (d->capacity >= n && d->pixels) return MT_OK;
  free(d->pixels);
  d->pixels = NULL;
  d->capacity = 0;
  /* a little slack so that a thread decoding images of varying sizes settles on one buffer */
  size_t want = n < ((size_t)64 << 20) ? n + n / 4 : n;
  uint8_t *p = malloc(want ? want : 1);
  if (!p) return mt__error(MT_ERR_MEMORY, "image %s: cannot allocate %zu bytes for the decoded pixels", name, want);
  d->pixels = p;
  d->capacity = want;
  return MT_OK;
}

void mt__decoded_free(mt__decoded *d) {
  if (!d) return;
  free(d->pixels);
  memset(d, 0, sizeof *d);
}

mt_status mt__image_probe(const void *buf, size_t len, const char *name, int *format, int *width, int *height,
                          int *channels) {
  if (!name) name = "(buffer)";
  int w = 0, h = 0, c = 0, f = buf ? sniff(buf, len) : MT_IMAGE_UNKNOWN;
  if (f == MT_IMAGE_JPEG) MT_TRY(mt__jpeg_probe(buf, len, name, &w, &h, &c));
  else if (f == MT_IMAGE_PNG) MT_TRY(mt__png_probe(buf, len, name, &w, &h, &c));
  else return unknown_format(buf, len, name);
  if (format) *format = f;
  if (width) *width = w;
  if (height) *height = h;
  if (channels) *channels = c;
  return MT_OK;
}

mt_status mt__image_check_region(const char *name, mt__image_request *req, int width, int height) {
  if (req->rw == 0 && req->rh == 0) {
    req->rx = req->ry = 0;
    req->rw = width;
    req->rh = height;
  }
  if (req->rw <= 0 || req->rh <= 0 || req->rx < 0 || req->ry < 0 || (int64_t)req->rx + req->rw > width ||
      (int64_t)req->ry + req->rh > height)
    return mt__error(MT_ERR_INDEX, "image %s: region x=%d y=%d w=%d h=%d is not inside the %dx%d image", name, req->rx,
                     req->ry, req->rw, req->rh, width, height);
  return MT_OK;
}

int mt__image_denom(const mt__image_request *req) {
  if (req->denom > 0) return req->denom;
  for (int d = 8; d > 1; d /= 2)
    if ((int64_t)req->rw >= (int64_t)req->min_w * d && (int64_t)req->rh >= (int64_t)req->min_h * d) return d;
  return 1;
}

static mt_status decode(const void *buf, size_t len, const char *name, mt__image_request req, mt__decoded *out) {
  int f = buf ? sniff(buf, len) : MT_IMAGE_UNKNOWN;
  if (f == MT_IMAGE_JPEG) return mt__jpeg_decode(buf, len, name, req, out);
  if (f == MT_IMAGE_PNG) return mt__png_decode(buf, len, name, req, out);
  return unknown_format(buf, len, name);
}

mt_status mt__image_decode_region(const void *buf, size_t len, const char *name, int rx, int ry, int rw, int rh,
                                  int min_w, int min_h, int allow_scaling, mt__decoded *out) {
  if (!name) name = "(buffer)";
  if (!out) return mt__error(MT_ERR_ARG, "image %s: decode_region: output is NULL", name);
  if (rw <= 0 || rh <= 0)
    return mt__error(MT_ERR_INDEX, "image %s: region x=%d y=%d w=%d h=%d is empty", name, rx, ry, rw, rh);
  mt__image_request req = {allow_scaling ? 0 : 1, rx, ry, rw, rh, min_w, min_h};
  return decode(buf, len, name, req, out);
}

mt_status mt_image_info(const void *buf, size_t len, int *format, int *width, int *height, int *channels) {
  return mt__image_probe(buf, len, "(buffer)", format, width, height, channels);
}

mt_status mt_image_decode(mt_tensor **out, const void *buf, size_t len, int scale_denom) {
  const char *name = "(buffer)";
  if (!out) return mt__error(MT_ERR_ARG, "image_decode: out is NULL");
  *out = NULL;
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8)
    return mt__error(MT_ERR_ARG, "image_decode: scale_denom must be 1, 2, 4 or 8, got %d", scale_denom);
  mt__decoded d = {0};
  mt__image_request req = {scale_denom, 0, 0, 0, 0, 0, 0};
  mt_status st = decode(buf, len, name, req, &d);
  if (st != MT_OK) {
    mt__decoded_free(&d);
    return st;
  }
  int64_t sizes[3] = {d.height, d.width, 3};
  st = mt_tensor_new(out, MT_U8, MT_CPU, 3, sizes);
  if (st == MT_OK) memcpy(mt_tensor_data(*out), d.pixels, (size_t)d.width * d.height * 3);
  mt__decoded_free(&d);
  return st;
}

mt_status mt_image_encode(mt_tensor **out, const mt_tensor *image, int format, int quality) {
  if (!out) return mt__error(MT_ERR_ARG, "image_encode: out is NULL");
  *out = NULL;
  MT_CHECK_TENSOR(image, "image_encode", "image");
  if (format != MT_IMAGE_JPEG && format != MT_IMAGE_PNG)
    return mt__error(MT_ERR_ARG, "image_encode: format must be 1 (JPEG) or 2 (PNG), got %d", format);
  if (format == MT_IMAGE_JPEG && (quality < 1 || quality > 100))
    return mt__error(MT_ERR_ARG, "image_encode: JPEG quality must be in 1..100, got %d", quality);
  if (image->dtype != MT_U8) return mt__error(MT_ERR_DTYPE, "image_encode: image must be uint8");
  if (image->device != MT_CPU) return mt__error(MT_ERR_DEVICE, "image_encode: image must be on the CPU");
  int nd = image->ndim;
  int64_t h = nd >= 1 ? image->sizes[0] : 0, w = nd >= 2 ? image->sizes[1] : 0, c = nd == 3 ? image->sizes[2] : 1;
  if ((nd != 2 && nd != 3) || (c != 1 && c != 3))
    return mt__error(MT_ERR_SHAPE, "image_encode: image must be H x W x 3 or H x W (uint8), got %d dimensions%s", nd,
                     nd == 3 ? " with a last size other than 1 or 3" : "");
  if (!mt__is_contiguous(image)) return mt__error(MT_ERR_ARG, "image_encode: image must be contiguous");
  int64_t side = format == MT_IMAGE_JPEG ? MT_IMAGE_MAX_SIDE : (int64_t)1 << 24;
  if (h < 1 || w < 1 || h > side || w > side)
    return mt__error(MT_ERR_SHAPE, "image_encode: %s cannot hold a %lldx%lld image (1..%lld per side)",
                     format == MT_IMAGE_JPEG ? "JPEG" : "PNG", (long long)w, (long long)h, (long long)side);
  const uint8_t *px = (const uint8_t *)mt__data(image);
  uint8_t *bytes = NULL;
  size_t n = 0;
  if (format == MT_IMAGE_JPEG) MT_TRY(mt__jpeg_encode(px, (int)w, (int)h, (int)c, quality, &bytes, &n));
  else MT_TRY(mt__png_encode(px, (int)w, (int)h, (int)c, &bytes, &n));
  int64_t size = (int64_t)n;
  mt_status st = mt_tensor_new(out, MT_U8, MT_CPU, 1, &size);
  if (st == MT_OK) memcpy(mt_tensor_data(*out), bytes, n);
  free(bytes);
  return st;
}
