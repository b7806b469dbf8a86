/* image_jpeg.c: JPEG through libjpeg-turbo's libjpeg API, which gives DCT-domain scaling
 * (scale_denom), column cropping (jpeg_crop_scanline) and row skipping (jpeg_skip_scanlines):
 * a random crop of a photo decodes only the iMCUs it covers, at the smallest scale that still
 * leaves enough pixels.
 *
 * Errors: libjpeg reports through error_exit, which must not return, so every entry point
 * sets a jump point and the error manager longjmps back with the formatted message. Warnings
 * (corrupt or truncated data, after which libjpeg fills in grey) are errors too, except the
 * few that leave the pixels intact (listed in benign()). Nothing is ever printed. */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>
#include "../core/error.h"
#include "image_codec.h"

/* a progressive JPEG may have thousands of tiny scans, each a full pass over the coefficients:
 * real encoders write about ten */
#define JPEG_MAX_SCANS 256
#define ROWS_PER_CALL 16
#define CROP_MARGIN 2

/* The memory source. At the end of the data it supplies an EOI marker, as jpeg_mem_src does,
 * but silently and noting it: a baseline file that lacks only its EOI has every pixel, while
 * one cut inside the entropy-coded data still fails (the Huffman decoder warns when it needs
 * bits past the marker). Multi-scan and arithmetic-coded files do not warn like that, so
 * there the end of data itself is the error. */
typedef struct jsrc {
  struct jpeg_source_mgr pub;
  int hit_eof;
} jsrc;

typedef struct jctx {
  struct jpeg_error_mgr err; /* first: libjpeg hands back a pointer to it */
  struct jpeg_progress_mgr progress;
  jsrc src;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX + 64];
} jctx;

static const JOCTET fake_eoi[2] = {0xFF, JPEG_EOI};

static void src_init(j_decompress_ptr c) { (void)c; }
static void src_term(j_decompress_ptr c) { (void)c; }

static boolean src_fill(j_decompress_ptr c) {
  jsrc *s = (jsrc *)c->src;
  s->hit_eof = 1;
  s->pub.next_input_byte = fake_eoi;
  s->pub.bytes_in_buffer = 2;
  return TRUE;
}

static void src_skip(j_decompress_ptr c, long n) {
  jsrc *s = (jsrc *)c->src;
  if (n <= 0) return;
  if ((size_t)n > s->pub.bytes_in_buffer) {
    src_fill(c);
    return;
  }
  s->pub.next_input_byte += n;
  s->pub.bytes_in_buffer -= (size_t)n;
}

static void set_source(j_decompress_ptr c, jctx *x, const void *buf, size_t len) {
  x->src.pub.init_source = src_init;
  x->src.pub.fill_input_buffer = src_fill;
  x->src.pub.skip_input_data = src_skip;
  x->src.pub.resync_to_restart = jpeg_resync_to_restart;
  x->src.pub.term_source = src_term;
  x->src.pub.next_input_byte = buf;
  x->src.pub.bytes_in_buffer = len;
  x->src.hit_eof = 0;
  c->src = &x->src.pub;
}

static void truncated(jctx *x) {
  snprintf(x->msg, sizeof x->msg, "Premature end of JPEG file");
  longjmp(x->jump, 1);
}

/* the error message, saying when the data ran out first (the likely cause of the rest) */
static mt_status jpeg_failure(const char *name, const char *what, const jctx *x, size_t len) {
  if (x->src.hit_eof && strcmp(x->msg, "Premature end of JPEG file") != 0)
    return mt__error(MT_ERR_FORMAT, "image %s: %s: truncated (%zu bytes): %s", name, what, len, x->msg);
  if (x->src.hit_eof) return mt__error(MT_ERR_FORMAT, "image %s: %s: truncated (%zu bytes)", name, what, len);
  return mt__error(MT_ERR_FORMAT, "image %s: %s: %s", name, what, x->msg);
}

static void j_error_exit(j_common_ptr c) {
  jctx *x = (jctx *)c->err;
  c->err->format_message(c, x->msg);
  longjmp(x->jump, 1);
}

static void j_output_message(j_common_ptr c) { (void)c; }

/* warnings that say nothing about the pixels: a metadata oddity, or junk bytes between
 * markers that libjpeg skipped without losing any entropy-coded data */
static int benign(int code) {
  return code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM || code == JWRN_BOGUS_ICC || code == JWRN_EXTRANEOUS_DATA;
}

static void j_emit_message(j_common_ptr c, int level) {
  if (level >= 0) return; /* trace output */
  if (benign(c->err->msg_code)) {
    c->err->num_warnings++;
    return;
  }
  j_error_exit(c); /* e.g. "Premature end of JPEG file": a truncated file must not decode */
}

static void j_progress(j_common_ptr c) {
  if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number > JPEG_MAX_SCANS) {
    jctx *x = (jctx *)c->err;
    snprintf(x->msg, sizeof x->msg, "more than %d scans in a progressive JPEG", JPEG_MAX_SCANS);
    longjmp(x->jump, 1);
  }
}

static void init_errors(jctx *x) {
  jpeg_std_error(&x->err);
  x->err.error_exit = j_error_exit;
  x->err.output_message = j_output_message;
  x->err.emit_message = j_emit_message;
  x->progress.progress_monitor = j_progress;
  x->msg[0] = '\0';
}

/* Probe and decode start alike. Called after the caller's setjmp: libjpeg's errors longjmp
 * there, to a frame that is still live. */
static void read_header(j_decompress_ptr c, jctx *x, const void *buf, size_t len) {
  jpeg_create_decompress(c);
  c->progress = &x->progress;
  set_source(c, x, buf, len);
  jpeg_read_header(c, TRUE);
}

mt_status mt__jpeg_probe(const void *buf, size_t len, const char *name, int *width, int *height, int *channels) {
  struct jpeg_decompress_struct c;
  jctx x;
  init_errors(&x);
  c.err = &x.err;
  if (setjmp(x.jump)) {
    jpeg_destroy_decompress(&c);
    return jpeg_failure(name, "JPEG header", &x, len);
  }
  read_header(&c, &x, buf, len);
  *width = (int)c.image_width;
  *height = (int)c.image_height;
  *channels = c.num_components;
  jpeg_destroy_decompress(&c);
  return MT_OK;
}

/* CMYK as Pillow converts it: r = (255 - k) * (255 - c) / 255 with its rounding. Adobe
 * software (Photoshop, and Pillow when writing) stores the inks inverted, flagged by the
 * Adobe APP14 marker. */
static void cmyk_to_rgb(uint8_t *dst, const uint8_t *src, JDIMENSION n, int inverted) {
  for (JDIMENSION i = 0; i < n; i++, src += 4, dst += 3) {
    int ink[4];
    for (int k = 0; k < 4; k++) ink[k] = inverted ? 255 - src[k] : src[k];
    int nk = 255 - ink[3];
    for (int k = 0; k < 3; k++) {
      int t = ink[k] * nk + 128;
      int v = nk - (((t >> 8) + t) >> 8);
      dst[k] = (uint8_t)(v < 0 ? 0 : v);
    }
  }
}

mt_status mt__jpeg_decode(const void *buf, size_t len, const char *name, mt__image_request req, mt__decoded *out) {
  struct jpeg_decompress_struct c;
  jctx x;
  init_errors(&x);
  c.err = &x.err;
  if (setjmp(x.jump)) {
    jpeg_destroy_decompress(&c);
    return jpeg_failure(name, "JPEG", &x, len);
  }
  read_header(&c, &x, buf, len);

  mt_status st = mt__image_check_size(name, "JPEG", c.image_width, c.image_height);
  if (st == MT_OK) st = mt__image_check_region(name, &req, (int)c.image_width, (int)c.image_height);
  if (st != MT_OK) {
    jpeg_destroy_decompress(&c);
    return st;
  }
  int d = mt__image_denom(&req);
  int cmyk = c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK;
  int inverted = cmyk && c.saw_Adobe_marker;
  c.scale_num = 1;
  c.scale_denom = (unsigned)d;
  c.out_color_space = cmyk ? JCS_CMYK : JCS_RGB; /* libjpeg expands grey and converts YCCK->CMYK */
  /* Block smoothing guesses the missing coefficients of a progressive file that lacks scans
   * from the neighbouring blocks, and a cropped decode has other neighbours at its edges
   * (found by fuzz_image). A complete file is unaffected. */
  c.do_block_smoothing = FALSE;
  jpeg_start_decompress(&c); /* reads every scan of a multi-scan file */
  if (x.src.hit_eof && (jpeg_has_multiple_scans(&c) || c.arith_code)) truncated(&x);

  /* the region in output pixels: DCT scaling maps source x to x / d exactly (the last,
   * partial block rounds up, hence output_width = ceil(width / d)) */
  JDIMENSION ow = c.output_width, oh = c.output_height;
  double x0 = (double)req.rx / d, y0 = (double)req.ry / d;
  double x1 = (double)((int64_t)req.rx + req.rw) / d, y1 = (double)((int64_t)req.ry + req.rh) / d;
  JDIMENSION xoff = (JDIMENSION)floor(x0), xend = (JDIMENSION)ceil(x1);
  JDIMENSION yoff = (JDIMENSION)floor(y0), yend = (JDIMENSION)ceil(y1);
  if (xend > ow) xend = ow;
  if (yend > oh) yend = oh;
  /* Fancy upsampling of subsampled chroma blends each pixel with the next chroma sample, and
   * the crop's edges act as image edges: 2 more columns on each side keep every pixel of the
   * region as the full decode has it. */
  JDIMENSION cx = xoff > CROP_MARGIN ? xoff - CROP_MARGIN : 0;
  JDIMENSION cend = xend + CROP_MARGIN < ow ? xend + CROP_MARGIN : ow;
  JDIMENSION cw = cend - cx;
  if (cw < ow) jpeg_crop_scanline(&c, &cx, &cw); /* moves cx left to an iMCU boundary */
  xoff = cx;
  cw = c.output_width;
  JDIMENSION rows = yend - yoff;
  size_t row_bytes = (size_t)cw * 3;
  st = mt__decoded_reserve(out, row_bytes * rows, name);
  if (st != MT_OK) {
    jpeg_destroy_decompress(&c);
    return st;
  }
  if (yoff > 0 && jpeg_skip_scanlines(&c, yoff) != yoff) {
    snprintf(x.msg, sizeof x.msg, "could not skip to row %u", (unsigned)yoff);
    longjmp(x.jump, 1);
  }
  JSAMPARRAY scratch = NULL;
  if (cmyk) scratch = (*c.mem->alloc_sarray)((j_common_ptr)&c, JPOOL_IMAGE, cw * 4, ROWS_PER_CALL);
  for (JDIMENSION done = 0; done < rows;) {
    JSAMPROW ptrs[ROWS_PER_CALL];
    JDIMENSION want = rows - done < ROWS_PER_CALL ? rows - done : ROWS_PER_CALL;
    for (JDIMENSION k = 0; k < want; k++) ptrs[k] = cmyk ? scratch[k] : out->pixels + (done + k) * row_bytes;
    JDIMENSION got = jpeg_read_scanlines(&c, ptrs, want);
    if (got == 0) {
      snprintf(x.msg, sizeof x.msg, "no data for row %u of %u", (unsigned)(yoff + done), (unsigned)oh);
      longjmp(x.jump, 1);
    }
    if (cmyk)
      for (JDIMENSION k = 0; k < got; k++) cmyk_to_rgb(out->pixels + (done + k) * row_bytes, scratch[k], cw, inverted);
    done += got;
  }
  if (x.src.hit_eof && c.arith_code) truncated(&x);
  /* rows below the region stay undecoded: no jpeg_finish_decompress, destroy aborts */
  jpeg_destroy_decompress(&c);
  out->width = (int)cw;
  out->height = (int)rows;
  out->rx = x0 - xoff;
  out->ry = y0 - yoff;
  out->rw = (double)req.rw / d;
  out->rh = (double)req.rh / d;
  out->scale_denom = d;
  return MT_OK;
}

/* ------------------------------------------------------------------------------------------
 * encoding into a growing malloc'd buffer we own (jpeg_mem_dest's buffer would leak when an
 * error interrupts it) */
typedef struct jdest {
  struct jpeg_destination_mgr pub;
  uint8_t *buf;
  size_t cap;
} jdest;

static void dest_init(j_compress_ptr c) {
  jdest *d = (jdest *)c->dest;
  d->pub.next_output_byte = d->buf;
  d->pub.free_in_buffer = d->cap;
}

static boolean dest_grow(j_compress_ptr c) {
  jdest *d = (jdest *)c->dest;
  uint8_t *nb = realloc(d->buf, d->cap * 2);
  if (!nb) ERREXIT1(c, JERR_OUT_OF_MEMORY, 99);
  d->buf = nb;
  d->pub.next_output_byte = nb + d->cap; /* the whole old buffer counts as written */
  d->pub.free_in_buffer = d->cap;
  d->cap *= 2;
  return TRUE;
}

static void dest_term(j_compress_ptr c) { (void)c; }

mt_status mt__jpeg_encode(const uint8_t *pixels, int w, int h, int channels, int quality, uint8_t **out,
                          size_t *out_len) {
  struct jpeg_compress_struct c;
  jctx x;
  jdest d;
  memset(&d, 0, sizeof d);
  d.cap = (size_t)w * h * channels / 4 + 4096;
  d.buf = malloc(d.cap);
  if (!d.buf) return mt__error(MT_ERR_MEMORY, "image_encode: cannot allocate %zu bytes for a JPEG", d.cap);
  d.pub.init_destination = dest_init;
  d.pub.empty_output_buffer = dest_grow;
  d.pub.term_destination = dest_term;
  init_errors(&x);
  c.err = &x.err;
  if (setjmp(x.jump)) {
    jpeg_destroy_compress(&c);
    free(d.buf);
    return mt__error(MT_ERR_FORMAT, "image_encode: JPEG: %s", x.msg);
  }
  jpeg_create_compress(&c);
  c.dest = &d.pub;
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = channels;
  c.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  size_t stride = (size_t)w * channels;
  while (c.next_scanline < c.image_height) {
    JSAMPROW ptrs[ROWS_PER_CALL];
    JDIMENSION n = c.image_height - c.next_scanline;
    if (n > ROWS_PER_CALL) n = ROWS_PER_CALL;
    for (JDIMENSION k = 0; k < n; k++) ptrs[k] = (JSAMPROW)(pixels + (c.next_scanline + k) * stride);
    jpeg_write_scanlines(&c, ptrs, n);
  }
  jpeg_finish_compress(&c);
  *out_len = d.cap - d.pub.free_in_buffer;
  *out = d.buf;
  jpeg_destroy_compress(&c);
  return MT_OK;
}
