/* rgc.c: the two element-wise steps of residual gradient compression around the selection
 * (topk.c): clearing what was sent from the residual (and, for momentum-factor masking, from
 * the local velocity), and summing every rank's (index, value) pairs into the dense gradient.
 * The entry points check their arguments and make one call through the backend table; the
 * bodies are csrc/cpu/dist_rgc.c (OpenMP) and kernels/dist_rgc.cu. */
#include <stdint.h>
#include "../core/backend.h"
#include "../core/error.h"

static mt_status check_f32(const mt_tensor *t, const char *op, const char *name, int device) {
  if (!t) return mt__error(MT_ERR_ARG, "%s: %s is NULL", op, name);
  if (mt_tensor_dtype(t) != MT_F32)
    return mt__error(MT_ERR_DTYPE, "%s: %s must be float32, got %s", op, name, mt_dtype_name(mt_tensor_dtype(t)));
  if (mt_tensor_device(t) != device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on device %d, expected %d (-1: CPU)", op, name, mt_tensor_device(t),
                     device);
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_SHAPE, "%s: %s must be contiguous", op, name);
  return MT_OK;
}

static mt_status check_idx(const mt_tensor *idx, const char *op, int device) {
  if (!idx) return mt__error(MT_ERR_ARG, "%s: idx is NULL", op);
  if (mt_tensor_dtype(idx) != MT_I32)
    return mt__error(MT_ERR_DTYPE, "%s: idx must be int32, got %s", op, mt_dtype_name(mt_tensor_dtype(idx)));
  if (mt_tensor_device(idx) != device)
    return mt__error(MT_ERR_DEVICE, "%s: idx is on device %d, expected %d (-1: CPU)", op, mt_tensor_device(idx),
                     device);
  if (!mt_tensor_is_contiguous(idx)) return mt__error(MT_ERR_SHAPE, "%s: idx must be contiguous", op);
  return MT_OK;
}

mt_status mt_dist_rgc_mask(mt_tensor *v, mt_tensor *u, mt_tensor *idx, int64_t count, int64_t base) {
  const char *op = "dist.rgc.mask";
  if (!v) return mt__error(MT_ERR_ARG, "%s: v is NULL", op);
  int device = mt_tensor_device(v);
  MT_TRY(check_f32(v, op, "v", device));
  if (u) {
    MT_TRY(check_f32(u, op, "u", device));
    if (mt_tensor_numel(u) != mt_tensor_numel(v))
      return mt__error(MT_ERR_SHAPE, "%s: u has %lld elements but v %lld", op, (long long)mt_tensor_numel(u),
                       (long long)mt_tensor_numel(v));
  }
  MT_TRY(check_idx(idx, op, device));
  if (count < 0 || count > mt_tensor_numel(idx))
    return mt__error(MT_ERR_ARG, "%s: count %lld is outside idx's 0..%lld", op, (long long)count,
                     (long long)mt_tensor_numel(idx));
  int64_t n = mt_tensor_numel(v);
  if (base < 0 || base + n > INT32_MAX)
    return mt__error(MT_ERR_ARG, "%s: base %lld puts v's indices beyond int32", op, (long long)base);
  if (count == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(device, op);
  if (!be) return mt_last_status();
  return be->dist_rgc_mask(v, u, idx, count, base);
}

static mt_status check_same(const mt_tensor *t, const char *op, const char *name, int device, int64_t n) {
  MT_TRY(check_f32(t, op, name, device));
  if (mt_tensor_numel(t) != n)
    return mt__error(MT_ERR_SHAPE, "%s: %s has %lld elements but v %lld", op, name, (long long)mt_tensor_numel(t),
                     (long long)n);
  return MT_OK;
}

mt_status mt_dist_rgc_accumulate(mt_tensor *v, mt_tensor *u, const mt_tensor *g, const mt_tensor *p, double momentum,
                                 int nesterov, double weight_decay) {
  const char *op = "dist.rgc.accumulate";
  if (!v) return mt__error(MT_ERR_ARG, "%s: v is NULL", op);
  int device = mt_tensor_device(v);
  int64_t n = mt_tensor_numel(v);
  MT_TRY(check_f32(v, op, "v", device));
  MT_TRY(check_same(g, op, "g", device, n));
  if (!(momentum >= 0 && momentum < 1e6) || !(weight_decay >= 0 && weight_decay < 1e6))
    return mt__error(MT_ERR_ARG, "%s: momentum and weight decay must be finite and >= 0 (got %g, %g)", op, momentum,
                     weight_decay);
  if ((momentum > 0) != (u != NULL))
    return mt__error(MT_ERR_ARG, "%s: %s", op,
                     u ? "u is given but momentum is 0" : "momentum > 0 needs the velocity u");
  if (u) MT_TRY(check_same(u, op, "u", device, n));
  if (nesterov && !u) return mt__error(MT_ERR_ARG, "%s: Nesterov needs momentum > 0", op);
  if (weight_decay > 0 && !p) return mt__error(MT_ERR_ARG, "%s: weight decay needs the parameters p", op);
  if (p) MT_TRY(check_same(p, op, "p", device, n));
  if (u == v || g == v || (p && p == v)) return mt__error(MT_ERR_ARG, "%s: v must not be u, g or p", op);
  if (n == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(device, op);
  if (!be) return mt_last_status();
  return be->dist_rgc_accumulate(v, u, g, weight_decay > 0 ? p : NULL, momentum, nesterov != 0, weight_decay);
}

mt_status mt_dist_rgc_scatter_add(mt_tensor *dst, const mt_tensor *idx, const mt_tensor *val, int64_t block,
                                  double scale) {
  const char *op = "dist.rgc.scatterAdd";
  if (!dst) return mt__error(MT_ERR_ARG, "%s: dst is NULL", op);
  int device = mt_tensor_device(dst);
  MT_TRY(check_f32(dst, op, "dst", device));
  MT_TRY(check_idx(idx, op, device));
  if (!val) return mt__error(MT_ERR_ARG, "%s: val is NULL", op);
  int vt = mt_tensor_dtype(val);
  if (vt != MT_F32 && vt != MT_F16 && vt != MT_BF16)
    return mt__error(MT_ERR_DTYPE, "%s: val must be float32, float16 or bfloat16, got %s", op, mt_dtype_name(vt));
  if (mt_tensor_device(val) != device)
    return mt__error(MT_ERR_DEVICE, "%s: val is on device %d, expected %d (-1: CPU)", op, mt_tensor_device(val),
                     device);
  if (!mt_tensor_is_contiguous(val)) return mt__error(MT_ERR_SHAPE, "%s: val must be contiguous", op);
  int64_t total = mt_tensor_numel(idx);
  if (mt_tensor_numel(val) != total)
    return mt__error(MT_ERR_SHAPE, "%s: idx has %lld elements but val %lld", op, (long long)total,
                     (long long)mt_tensor_numel(val));
  if (block < 0 || (block == 0 && total > 0) || (block > 0 && total % block != 0))
    return mt__error(MT_ERR_ARG, "%s: %lld pairs are not whole blocks of %lld", op, (long long)total, (long long)block);
  if (total == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(device, op);
  if (!be) return mt_last_status();
  return be->dist_rgc_scatter_add(dst, idx, val, block, scale);
}
