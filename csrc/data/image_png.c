/* image_png.c: PNG through libpng's simplified API (png_image), which keeps its state in the
 * png_image, reports errors in image.message instead of printing, and converts palette, grey,
 * 16-bit and interlaced files to 8-bit RGB(A) itself.
 * 16-bit samples are scaled to 8 bits as sRGB values, like 8-bit ones (see flags below). A gAMA
 * chunk far from sRGB is honoured by libpng (converted to sRGB), which Pillow ignores.
 * Alpha is dropped, not composited: the colour channels come out as stored, as Pillow's
 * convert('RGB') gives them (8-bit output is not premultiplied). */
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "../core/error.h"
#include "image_codec.h"

mt_status mt__png_probe(const void *buf, size_t len, const char *name, int *width, int *height, int *channels) {
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&im, buf, len))
    return mt__error(MT_ERR_FORMAT, "image %s: PNG header: %s", name, im.message);
  *width = (int)(im.width > 0x7fffffffu ? 0x7fffffffu : im.width);
  *height = (int)(im.height > 0x7fffffffu ? 0x7fffffffu : im.height);
  *channels = (int)PNG_IMAGE_SAMPLE_CHANNELS(im.format);
  png_image_free(&im);
  return MT_OK;
}

mt_status mt__png_decode(const void *buf, size_t len, const char *name, mt__image_request req, mt__decoded *out) {
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&im, buf, len))
    return mt__error(MT_ERR_FORMAT, "image %s: PNG header: %s", name, im.message);
  mt_status st = mt__image_check_size(name, "PNG", im.width, im.height);
  if (st == MT_OK) st = mt__image_check_region(name, &req, (int)im.width, (int)im.height);
  int alpha = (im.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  int bpp = alpha ? 4 : 3;
  size_t w = im.width, h = im.height;
  if (st == MT_OK) st = mt__decoded_reserve(out, w * h * bpp, name);
  if (st != MT_OK) {
    png_image_free(&im);
    return st;
  }
  im.format = alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
  /* without this flag libpng takes 16-bit samples as linear light and brightens them on the
   * way to 8-bit sRGB; every other reader just scales them (v / 257) */
  im.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  if (!png_image_finish_read(&im, NULL, out->pixels, (png_int_32)(w * bpp), NULL))
    return mt__error(MT_ERR_FORMAT, "image %s: PNG: %s", name, im.message); /* finish_read freed im */
  if (alpha) /* RGBA -> RGB in place: the write position never passes the read position */
    for (size_t i = 0, n = w * h; i < n; i++) {
      uint8_t *dst = out->pixels + 3 * i, *src = out->pixels + 4 * i;
      dst[0] = src[0];
      dst[1] = src[1];
      dst[2] = src[2];
    }
  out->width = (int)w;
  out->height = (int)h;
  out->rx = req.rx;
  out->ry = req.ry;
  out->rw = req.rw;
  out->rh = req.rh;
  out->scale_denom = 1;
  return MT_OK;
}

mt_status mt__png_encode(const uint8_t *pixels, int w, int h, int channels, uint8_t **out, size_t *out_len) {
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  im.width = (png_uint_32)w;
  im.height = (png_uint_32)h;
  im.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  png_alloc_size_t cap = PNG_IMAGE_PNG_SIZE_MAX(im);
  uint8_t *mem = malloc(cap);
  if (!mem) return mt__error(MT_ERR_MEMORY, "image_encode: cannot allocate %zu bytes for a PNG", (size_t)cap);
  png_alloc_size_t n = cap;
  if (!png_image_write_to_memory(&im, mem, &n, 0, pixels, (png_int_32)((size_t)w * channels), NULL)) {
    free(mem);
    return mt__error(MT_ERR_FORMAT, "image_encode: PNG: %s", im.message);
  }
  *out = mem;
  *out_len = n;
  return MT_OK;
}
