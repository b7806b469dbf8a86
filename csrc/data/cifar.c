/* cifar.c: the CIFAR-10 / CIFAR-100 binary format, plain or gzip.
 * A file is records back to back, each nlabels label bytes (CIFAR-10: the class; CIFAR-100:
 * coarse then fine) and 3072 pixel bytes: the 32 x 32 red plane, then green, then blue, rows
 * top to bottom, which is already the 3 x 32 x 32 layout of the image tensor. There is no
 * header, so the checks are the length (a whole number of records) and the label ranges.
 * A gzip file is inflated twice: once to count its bytes, then into the tensors, so that no
 * buffer ever grows with what a compressed stream claims. */
#include <stdio.h>
#include <string.h>
#include "zsource.h"
#include "../core/tensor.h"
#include "../core/error.h"

#define CIFAR_PIXELS 3072 /* 3 x 32 x 32 */

static const char *const label_names[2][2] = {{"label", NULL}, {"coarse label", "fine label"}};
static const unsigned label_limits[2][2] = {{10, 0}, {20, 100}};

static mt_status cut_short(const mt__zsource *s, uint64_t at) {
  return mt__error(MT_ERR_FORMAT,
                   "cifar: %s: the gzip stream is cut short at compressed byte %zu (after %llu bytes of records)",
                   s->what, s->len, (unsigned long long)at);
}

static mt_status new_tensor(mt_tensor **out, int dtype, int ndim, const int64_t *sizes, const char *what) {
  mt_status st = mt_tensor_new(out, dtype, MT_CPU, ndim, sizes);
  if (st == MT_OK) return st;
  char why[256], sz[96];
  snprintf(why, sizeof why, "%s", mt_last_error());
  return mt__error(st, "cifar: %s: cannot make a %s tensor: %s", what, mt__sizes_str(ndim, sizes, sz, sizeof sz), why);
}

static mt_status parse(mt_tensor **images, mt_tensor **labels, const void *buf, size_t len, int nlabels,
                       const char *what) {
  const uint64_t rec = (uint64_t)nlabels + CIFAR_PIXELS;
  const char *kind = nlabels == 1 ? "CIFAR-10" : "CIFAR-100";
  mt__zsource s;
  mt__zsource_init(&s, buf, len, "cifar", what);
  uint64_t total = len;
  if (s.gz) { /* first pass: the decompressed length */
    mt_status st = mt__zsource_read(&s, NULL, UINT64_MAX, &total);
    if (st == MT_OK && s.cut) st = cut_short(&s, total);
    mt__zsource_free(&s);
    MT_TRY(st);
    mt__zsource_init(&s, buf, len, "cifar", what);
  }
  if (total == 0) return mt__error(MT_ERR_FORMAT, "cifar: %s: no records (the data is empty)", what);
  if (total % rec)
    return mt__error(MT_ERR_FORMAT,
                     "cifar: %s: %llu bytes are not a whole number of %llu-byte %s records (%llu records, then "
                     "%llu bytes of an incomplete one at byte offset %llu)",
                     what, (unsigned long long)total, (unsigned long long)rec, kind, (unsigned long long)(total / rec),
                     (unsigned long long)(total % rec), (unsigned long long)(total - total % rec));
  int64_t n = (int64_t)(total / rec);
  int64_t isz[4] = {n, 3, 32, 32}, lsz[2] = {n, nlabels};
  mt_tensor *img = NULL, *lab = NULL;
  mt_status st = new_tensor(&img, MT_U8, 4, isz, what);
  if (st == MT_OK) st = new_tensor(&lab, MT_I64, 2, lsz, what);
  uint8_t *pix = st == MT_OK ? (uint8_t *)mt__data(img) : NULL;
  int64_t *lv = st == MT_OK ? (int64_t *)mt__data(lab) : NULL;
  for (int64_t i = 0; i < n && st == MT_OK; i++) {
    uint8_t l[2];
    uint64_t at = s.out_pos, got = 0, gotpix = 0;
    st = mt__zsource_read(&s, l, (uint64_t)nlabels, &got);
    if (st == MT_OK) st = mt__zsource_read(&s, pix + i * CIFAR_PIXELS, CIFAR_PIXELS, &gotpix);
    /* the first pass saw these bytes; a shortfall here would mean the buffer changed under us */
    if (st == MT_OK && (got != (uint64_t)nlabels || gotpix != CIFAR_PIXELS))
      st = mt__error(MT_ERR_INTERNAL, "cifar: %s: record %lld ended early on the second pass", what, (long long)i + 1);
    for (int k = 0; k < nlabels && st == MT_OK; k++) {
      if (l[k] >= label_limits[nlabels - 1][k])
        st = mt__error(MT_ERR_FORMAT,
                       "cifar: %s: record %lld of %lld (byte offset %llu): %s %u is out of range 0..%u for %s", what,
                       (long long)i + 1, (long long)n, (unsigned long long)(at + k), label_names[nlabels - 1][k], l[k],
                       label_limits[nlabels - 1][k] - 1, kind);
      lv[i * nlabels + k] = l[k];
    }
  }
  mt__zsource_free(&s);
  if (st != MT_OK) {
    mt_tensor_release(img);
    mt_tensor_release(lab);
    return st;
  }
  *images = img;
  *labels = lab;
  return MT_OK;
}

mt_status mt_cifar_parse(mt_tensor **images, mt_tensor **labels, const void *buf, size_t len, int nlabels,
                         const char *what) {
  if (!images || !labels) return mt__error(MT_ERR_ARG, "cifar: images or labels is NULL");
  *images = *labels = NULL;
  if (!what) what = "<memory>";
  if (nlabels != 1 && nlabels != 2)
    return mt__error(MT_ERR_ARG, "cifar: %s: nlabels is %d; it must be 1 (CIFAR-10) or 2 (CIFAR-100)", what, nlabels);
  if (!buf && len) return mt__error(MT_ERR_ARG, "cifar: %s: buffer is NULL but its length is %zu", what, len);
  return parse(images, labels, buf ? buf : "", len, nlabels, what);
}

mt_status mt_cifar_load(mt_tensor **images, mt_tensor **labels, const char *path, int nlabels) {
  if (!images || !labels) return mt__error(MT_ERR_ARG, "cifar: images or labels is NULL");
  *images = *labels = NULL;
  if (nlabels != 1 && nlabels != 2)
    return mt__error(MT_ERR_ARG, "cifar: %s: nlabels is %d; it must be 1 (CIFAR-10) or 2 (CIFAR-100)",
                     path ? path : "(null)", nlabels);
  mt__file_bytes f;
  MT_TRY(mt__file_bytes_open(&f, path, "cifar"));
  mt_status st = mt_cifar_parse(images, labels, f.data, f.len, nlabels, path);
  mt__file_bytes_close(&f);
  return st;
}
