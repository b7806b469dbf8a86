/* image_codec.h: what image.c (format dispatch, public API) shares with the two codecs,
 * image_jpeg.c (libjpeg-turbo) and image_png.c (libpng's simplified API). Internal only. */
#ifndef MT_DATA_IMAGE_CODEC_H
#define MT_DATA_IMAGE_CODEC_H
#include <stddef.h>
#include <stdint.h>
#include "image.h"

/* Images we refuse to decode before allocating anything: a crafted header can declare
 * 65535 x 65535 in a few bytes. 2^28 pixels is 768 MiB of RGB, far beyond any photo. */
#define MT_IMAGE_MAX_PIXELS ((uint64_t)1 << 28)
#define MT_IMAGE_MAX_SIDE 65500

/* checks a declared size against the limits above (MT_ERR_FORMAT naming `name`) */
mt_status mt__image_check_size(const char *name, const char *format, uint64_t width, uint64_t height);
/* grows d->pixels to at least n bytes (contents are not kept) */
mt_status mt__decoded_reserve(mt__decoded *d, size_t n, const char *name);

/* What to decode: the source region (rw == 0: the whole image) and the DCT denominator, or
 * denom 0 to choose the largest d in {8, 4, 2, 1} keeping rw/d >= min_w and rh/d >= min_h. */
typedef struct mt__image_request {
  int denom;
  int rx, ry, rw, rh;
  int min_w, min_h;
} mt__image_request;

/* fills in a whole-image region and checks the region against the image (MT_ERR_INDEX) */
mt_status mt__image_check_region(const char *name, mt__image_request *req, int width, int height);
/* the denominator a request asks for (JPEG only) */
int mt__image_denom(const mt__image_request *req);

/* JPEG: decodes at 1/denom in the DCT domain only the rows and iMCU columns covering the region */
mt_status mt__jpeg_probe(const void *buf, size_t len, const char *name, int *width, int *height, int *channels);
mt_status mt__jpeg_decode(const void *buf, size_t len, const char *name, mt__image_request req, mt__decoded *out);
/* pixels: h x w x channels (1 or 3) rows back to back; *out is malloc'd, *out_len its size */
mt_status mt__jpeg_encode(const uint8_t *pixels, int w, int h, int channels, int quality, uint8_t **out,
                          size_t *out_len);

/* PNG: always decoded whole (the region is the caller's business) */
mt_status mt__png_probe(const void *buf, size_t len, const char *name, int *width, int *height, int *channels);
mt_status mt__png_decode(const void *buf, size_t len, const char *name, mt__image_request req, mt__decoded *out);
mt_status mt__png_encode(const uint8_t *pixels, int w, int h, int channels, uint8_t **out, size_t *out_len);
#endif
