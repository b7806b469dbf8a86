/* onebit.c: the entry points of 1-bit compression with error feedback (Seide et al. 2014;
 * lua/moontorch/dist/onebit.lua): they check their arguments and make one call through the
 * backend table; the bodies are csrc/cpu/dist_onebit.c (OpenMP) and kernels/dist_onebit.cu. */
#include <math.h>
#include <stdint.h>
#include "../core/backend.h"
#include "../core/error.h"

static mt_status check(const mt_tensor *t, const char *op, const char *name, int dtype, int device, int64_t need) {
  if (!t) return mt__error(MT_ERR_ARG, "%s: %s is NULL", op, name);
  if (mt_tensor_dtype(t) != dtype)
    return mt__error(MT_ERR_DTYPE, "%s: %s must be %s, got %s", op, name, mt_dtype_name(dtype),
                     mt_dtype_name(mt_tensor_dtype(t)));
  if (mt_tensor_device(t) != device)
    return mt__error(MT_ERR_DEVICE, "%s: %s is on device %d, expected %d (-1: CPU)", op, name, mt_tensor_device(t),
                     device);
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_SHAPE, "%s: %s must be contiguous", op, name);
  if (mt_tensor_numel(t) < need)
    return mt__error(MT_ERR_SHAPE, "%s: %s has %lld elements, needs %lld", op, name, (long long)mt_tensor_numel(t),
                     (long long)need);
  return MT_OK;
}

static mt_status check_chunk(int64_t chunk, const char *op) {
  if (chunk < 8 || chunk % 8 != 0 || chunk > INT32_MAX)
    return mt__error(MT_ERR_ARG, "%s: chunk must be a positive multiple of 8, got %lld", op, (long long)chunk);
  return MT_OK;
}

mt_status mt_dist_onebit_encode(mt_tensor *v, const mt_tensor *g, mt_tensor *bits, mt_tensor *scales, int64_t chunk) {
  const char *op = "dist.onebit.encode";
  if (!v) return mt__error(MT_ERR_ARG, "%s: v is NULL", op);
  int device = mt_tensor_device(v);
  int64_t n = mt_tensor_numel(v);
  MT_TRY(check(v, op, "v", MT_F32, device, 0));
  if (g) {
    MT_TRY(check(g, op, "g", MT_F32, device, n));
    if (mt_tensor_numel(g) != n)
      return mt__error(MT_ERR_SHAPE, "%s: g has %lld elements but v %lld", op, (long long)mt_tensor_numel(g),
                       (long long)n);
    if (g == v) return mt__error(MT_ERR_ARG, "%s: g must not be v", op);
  }
  MT_TRY(check_chunk(chunk, op));
  MT_TRY(check(bits, op, "bits", MT_U8, device, (n + 7) / 8));
  MT_TRY(check(scales, op, "scales", MT_F32, device, (n + chunk - 1) / chunk));
  if (n == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(device, op);
  if (!be) return mt_last_status();
  return be->dist_onebit_encode(v, g, bits, scales, chunk);
}

mt_status mt_dist_onebit_decode(mt_tensor *dst, const mt_tensor *bits, const mt_tensor *scales, int64_t chunk,
                                int64_t nblocks, double alpha) {
  const char *op = "dist.onebit.decode";
  if (!dst) return mt__error(MT_ERR_ARG, "%s: dst is NULL", op);
  int device = mt_tensor_device(dst);
  int64_t n = mt_tensor_numel(dst);
  MT_TRY(check(dst, op, "dst", MT_F32, device, 0));
  MT_TRY(check_chunk(chunk, op));
  if (nblocks < 1 || nblocks > INT32_MAX)
    return mt__error(MT_ERR_ARG, "%s: nblocks must be >= 1, got %lld", op, (long long)nblocks);
  if (!isfinite(alpha)) return mt__error(MT_ERR_ARG, "%s: alpha must be finite, got %g", op, alpha);
  MT_TRY(check(bits, op, "bits", MT_U8, device, nblocks * ((n + 7) / 8)));
  MT_TRY(check(scales, op, "scales", MT_F32, device, nblocks * ((n + chunk - 1) / chunk)));
  if (n == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(device, op);
  if (!be) return mt_last_status();
  return be->dist_onebit_decode(dst, bits, scales, chunk, nblocks, alpha);
}
