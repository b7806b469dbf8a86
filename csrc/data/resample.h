/* resample.h: the antialiased bilinear resampler shared by the transforms (transform.c) and
 * mt_image_resize. It is PIL's BILINEAR resize: a triangle filter whose support widens with
 * the downscale factor, applied separably (vertically, then horizontally), with the coefficients
 * computed per call. It reads a fractional region of a uint8 buffer and writes floats, so the
 * caller decides about colour ops, rounding and layout. */
#ifndef MT_DATA_RESAMPLE_H
#define MT_DATA_RESAMPLE_H
#include <stddef.h>
#include <stdint.h>
#include "../moontorch.h"

/* One axis's coefficient table: output i reads taps [start[i], start[i] + taps) with weights
 * w[i * taps ...]. Every output has the same tap count (short ones are padded with zero
 * weights), so the inner loops have a fixed trip count and no branches. */
typedef struct mt__axis {
  int n, taps;
  int lo, hi; /* input indices touched by any output: [lo, hi) */
  int *start;
  float *w;
  float *w4; /* w with each weight repeated 4 times (the 3- and 4-channel horizontal pass) */
  size_t cap_start, cap_w, cap_w4;
} mt__axis;

/* Working memory of one thread, grown as needed; zero it once, free with mt__resampler_free. */
typedef struct mt__resampler {
  mt__axis x, y;
  float *rows; /* one output row after the vertical pass, over the columns it needs */
  size_t cap_rows;
} mt__resampler;

void mt__resampler_free(mt__resampler *r);

/* Resample the region (x0, y0, w, h), in src pixel coordinates (fractional allowed), of src
 * (height x width x channels uint8, row stride `stride` bytes) to dst: channels planes of
 * out_h x out_w floats in [0, 255]. Filter taps are clamped to the columns [cx0, cx1) and rows
 * [cy0, cy1) of src (the crop for crop-then-resize, the whole image for resize-then-crop).
 * flip mirrors the output horizontally. `name` goes into error messages. */
mt_status mt__resample(mt__resampler *r, const uint8_t *src, int width, int height, size_t stride, int channels,
                       double x0, double y0, double w, double h, int cx0, int cy0, int cx1, int cy1, int out_w,
                       int out_h, int flip, float *dst, const char *name);
#endif
