/* image.h: the decoder interface the transforms use (csrc/data/image.c implements it).
 * Decoding is reentrant: no global state, libjpeg/libpng errors come back as statuses. */
#ifndef MT_DATA_IMAGE_H
#define MT_DATA_IMAGE_H
#include <stddef.h>
#include <stdint.h>
#include "../moontorch.h"

/* A decoded RGB buffer (row stride width * 3) and where the requested region lies in it, in
 * this buffer's pixel coordinates (DCT scaling and partial decoding move and shrink it).
 * `pixels` is grown as needed and reused across calls: zero the struct once, then pass it to
 * every decode of the same thread, and free it with mt__decoded_free. */
typedef struct mt__decoded {
  uint8_t *pixels;
  size_t capacity;
  int width, height;
  double rx, ry, rw, rh;
  int scale_denom;
} mt__decoded;

/* format (mt_image_format), size and channel count from the header only */
mt_status mt__image_probe(const void *buf, size_t len, const char *name, int *format, int *width, int *height,
                          int *channels);

/* Decode the region (rx, ry, rw, rh) of the full-resolution image, in source pixels, at least
 * as large as min_w x min_h after scaling. With allow_scaling a JPEG is decoded at the largest
 * denominator d in {1, 2, 4, 8} keeping rw/d >= min_w and rh/d >= min_h, and only the rows
 * (jpeg_skip_scanlines) and columns (jpeg_crop_scanline) covering the region are decoded; the
 * buffer may be larger than the region. PNG decodes whole. `name` goes into error messages. */
mt_status mt__image_decode_region(const void *buf, size_t len, const char *name, int rx, int ry, int rw, int rh,
                                  int min_w, int min_h, int allow_scaling, mt__decoded *out);
void mt__decoded_free(mt__decoded *d);
#endif
