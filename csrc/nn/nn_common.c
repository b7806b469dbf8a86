/* nn_common.c: the argument checks and contiguous buffers every nn entry point shares. */
#include "nn_common.h"

mt_status mt__nn_check_float(const mt_tensor *t, const char *op, const char *what) {
  MT_CHECK_TENSOR(t, op, what);
  if (!mt_dtype_is_floating(t->dtype))
    return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s, expected a floating dtype", op, what, mt_dtype_name(t->dtype));
  return MT_OK;
}

mt_status mt__nn_check_same(const mt_tensor *t, const mt_tensor *input, const char *op, const char *what) {
  char b1[64], b2[64];
  MT_CHECK_TENSOR(t, op, what);
  if (t->device != input->device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on %s but input is on %s", op, what,
                     mt__device_str(t->device, b1, sizeof b1), mt__device_str(input->device, b2, sizeof b2));
  if (t->dtype != input->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: %s has dtype %s but input has %s", op, what, mt_dtype_name(t->dtype),
                     mt_dtype_name(input->dtype));
  return MT_OK;
}

mt_status mt__nn_check_like(const mt_tensor *t, const mt_tensor *input, int ndim, const int64_t *sizes, const char *op,
                            const char *what) {
  char b1[64], b2[64];
  MT_TRY(mt__nn_check_same(t, input, op, what));
  int same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->sizes[i] == sizes[i];
  if (!same)
    return mt__error(MT_ERR_SHAPE, "%s: %s has size %s, expected %s", op, what, mt__shape_str(t, b1, sizeof b1),
                     mt__sizes_str(ndim, sizes, b2, sizeof b2));
  return MT_OK;
}

const mt_backend *mt__nn_backend(const mt_tensor *t, const char *op) { return mt__backend_for(t->device, op); }

mt_status mt__nn_contig(const mt_tensor *t, mt_tensor **out, const char *op) {
  if (mt__is_contiguous(t)) {
    *out = mt__tensor_alias(t);
    return *out ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

mt_status mt__nn_result_buf(mt_tensor *out, const mt_tensor *avoid1, const mt_tensor *avoid2, int keep_values,
                            mt_tensor **buf, const char *op) {
  if (mt__is_contiguous(out) && out != avoid1 && out != avoid2) {
    *buf = mt__tensor_alias(out);
    return *buf ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  if (keep_values) return mt__nn_contig(out, buf, op);
  return mt__tensor_empty(buf, out->dtype, out->device, out->ndim, out->sizes);
}

mt_status mt__nn_result_done(mt_tensor *out, mt_tensor *buf, mt_status st) {
  if (!buf) return st;
  if (st == MT_OK && mt__data(buf) != mt__data(out)) st = mt_copy(out, buf);
  mt_tensor_release(buf);
  return st;
}

int mt__nn_cl(const mt_tensor *t) { return t->ndim == 4 && mt__is_channels_last(t); }

void mt__nn_follow(mt_tensor *out, int cl) {
  if (out->ndim == 4 && out->storage) mt__set_layout(out, cl);
}

/* t already dense in layout cl (contiguous when not cl); size-1 dimensions' strides do not
 * count, so a 1x1 pooled map can be both */
static int in_layout(const mt_tensor *t, int cl) {
  if (!cl) return mt__is_contiguous(t);
  if (t->ndim != 4) return 0;
  int64_t want[4];
  mt__channels_last_strides(t->sizes, want);
  for (int i = 0; i < 4; i++)
    if (t->sizes[i] > 1 && t->strides[i] != want[i]) return 0;
  return 1;
}

mt_status mt__nn_dense(const mt_tensor *t, int cl, mt_tensor **out, const char *op) {
  if (!cl) return mt__nn_contig(t, out, op);
  if (in_layout(t, cl)) {
    *out = mt__tensor_alias(t);
    return *out ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  MT_TRY(mt__tensor_empty(out, t->dtype, t->device, t->ndim, t->sizes));
  mt__set_layout(*out, true);
  mt_status st = mt_copy(*out, t);
  if (st != MT_OK) {
    mt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

mt_status mt__nn_result_dense(mt_tensor *out, int cl, int keep_values, mt_tensor **buf, const char *op) {
  if (!cl) return mt__nn_result_buf(out, NULL, NULL, keep_values, buf, op);
  if (in_layout(out, cl)) {
    *buf = mt__tensor_alias(out);
    return *buf ? MT_OK : mt__error(MT_ERR_MEMORY, "%s: out of memory", op);
  }
  if (keep_values) return mt__nn_dense(out, cl, buf, op);
  MT_TRY(mt__tensor_empty(buf, out->dtype, out->device, out->ndim, out->sizes));
  mt__set_layout(*buf, true);
  return MT_OK;
}

void mt__nn_release(mt_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i]) mt_tensor_release(ts[i]);
}
