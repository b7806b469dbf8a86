/* ops_tconv.c: the public entry point of torch.conv2/xcorr2/conv3/xcorr3, Torch7's direct
 * convolutions of images with kernels (not the nn layers: any dtype, no batch, no stride).
 * The three shape forms are brought to one layout, x as P x D x H x W and k as
 * Q x Pk x kD x kH x kW (a 2-d convolution has D = kD = 1), by header-only views, so the
 * backend has one body for all of them. */
#include <string.h>
#include "backend.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

/* A header over t's memory (no reference taken: it lives only while t does) in the backend's
 * layout: `slots` non-spatial dims, of which t supplies the first `lead`, the rest size 1, then
 * three spatial dims, of which t's last ns are the last ns. */
static mt_tensor layout(const mt_tensor *t, int lead, int slots, int ns) {
  mt_tensor v = *t;
  v.ndim = slots + 3;
  for (int i = 0; i < v.ndim; i++) v.sizes[i] = 1, v.strides[i] = 0;
  for (int i = 0; i < lead; i++) v.sizes[i] = t->sizes[i], v.strides[i] = t->strides[i];
  for (int i = 0; i < ns; i++) {
    v.sizes[slots + 3 - ns + i] = t->sizes[lead + i];
    v.strides[slots + 3 - ns + i] = t->strides[lead + i];
  }
  return v;
}

static int overlaps(const mt_tensor *a, const mt_tensor *b) {
  return a == b || (a->storage && a->storage == b->storage);
}

mt_status mt_tensor_conv(mt_tensor *out, const mt_tensor *x, const mt_tensor *k, int nspatial, int full, int flip) {
  const char *op = nspatial == 3 ? (flip ? "conv3" : "xcorr3") : (flip ? "conv2" : "xcorr2");
  MT_CHECK_TENSOR(out, op, "result tensor");
  MT_CHECK_TENSOR(x, op, "input");
  MT_CHECK_TENSOR(k, op, "kernel");
  if (nspatial != 2 && nspatial != 3) return mt__error(MT_ERR_ARG, "%s: nspatial must be 2 or 3, got %d", op, nspatial);
  char b1[128], b2[128];
  int ns = nspatial, xd = x->ndim, kd = k->ndim;
  int single = xd == ns && kd == ns, diagonal = xd == ns + 1 && kd == ns + 1, mv = xd == ns + 1 && kd == ns + 2;
  if (!single && !diagonal && !mv)
    return mt__error(
        MT_ERR_SHAPE,
        "%s: expected input and kernel of %d and %d, %d and %d, or %d and %d dimensions, got sizes %s and %s", op, ns,
        ns, ns + 1, ns + 1, ns + 1, ns + 2, SHAPE(x, b1), SHAPE(k, b2));
  if (x->dtype != k->dtype)
    return mt__error(MT_ERR_DTYPE, "%s: input and kernel must have the same dtype, got %s and %s", op,
                     mt_dtype_name(x->dtype), mt_dtype_name(k->dtype));
  if (x->device != k->device) return mt__error(MT_ERR_DEVICE, "%s: input and kernel must be on the same device", op);
  if (mt__numel(x) == 0 || mt__numel(k) == 0)
    return mt__error(MT_ERR_SHAPE, "%s: empty input or kernel (sizes %s and %s)", op, SHAPE(x, b1), SHAPE(k, b2));
  int64_t planes = single ? 1 : x->sizes[0];
  if (diagonal && k->sizes[0] != planes)
    return mt__error(MT_ERR_SHAPE, "%s: input has %lld planes but the kernel has %lld (sizes %s and %s)", op,
                     (long long)planes, (long long)k->sizes[0], SHAPE(x, b1), SHAPE(k, b2));
  if (mv && k->sizes[1] != planes)
    return mt__error(MT_ERR_SHAPE, "%s: input has %lld planes but kernel dimension 2 has size %lld (sizes %s and %s)",
                     op, (long long)planes, (long long)k->sizes[1], SHAPE(x, b1), SHAPE(k, b2));
  /* output: (Q,) then one size per spatial dim */
  int od = single ? ns : ns + 1;
  int64_t osz[MT_MAX_DIMS];
  if (!single) osz[0] = k->sizes[0];
  for (int i = 0; i < ns; i++) {
    int64_t xs = x->sizes[xd - ns + i], ks = k->sizes[kd - ns + i];
    if (!full && xs < ks)
      return mt__error(MT_ERR_SHAPE, "%s: input of size %s is smaller than the kernel of size %s ('V' convolution)", op,
                       SHAPE(x, b1), SHAPE(k, b2));
    osz[od - ns + i] = full ? xs + ks - 1 : xs - ks + 1;
  }
  const mt_backend *be = mt__backend_for(x->device, op);
  if (!be) return mt_last_status();

  mt_tensor *dst = out, *tmp = NULL;
  if (overlaps(out, x) || overlaps(out, k)) {
    MT_TRY(mt__tensor_empty(&tmp, x->dtype, x->device, od, osz));
    dst = tmp;
  } else {
    MT_TRY(mt__prepare_out(out, x->dtype, x->device, od, osz, op));
  }
  int lead = single ? 0 : 1;
  mt_tensor xv = layout(x, lead, 1, ns), ov = layout(dst, lead, 1, ns);
  mt_tensor kv = layout(k, single ? 0 : diagonal ? 1 : 2, 2, ns);
  mt_status st = be->tensor_conv(&ov, &xv, &kv, full != 0, flip != 0, diagonal);
  if (tmp) {
    if (st == MT_OK) st = mt__prepare_out(out, x->dtype, x->device, od, osz, op);
    if (st == MT_OK) st = be->copy(out, tmp);
    mt_tensor_release(tmp);
  }
  return st;
}
