/* topk.c: the selection step of residual gradient compression (RedSync; Deep Gradient
 * Compression): the public entry point checks its arguments, computes k (and the threshold
 * method's bound kmax) and makes one call through the backend table. The bodies, and how each
 * method selects, are csrc/cpu/dist_topk.c and kernels/dist_topk.cu. */
#include <math.h>
#include <stdint.h>
#include "../core/backend.h"
#include "../core/error.h"

static mt_status check_out(const mt_tensor *t, const char *name, int dtype, const char *dname, int device) {
  if (!t) return mt__error(MT_ERR_ARG, "dist.topk: %s is NULL", name);
  if (mt_tensor_dtype(t) != dtype) return mt__error(MT_ERR_DTYPE, "dist.topk: %s must be a %s tensor", name, dname);
  if (mt_tensor_device(t) != device)
    return mt__error(MT_ERR_DEVICE, "dist.topk: %s is on device %d but v on device %d (-1: CPU)", name,
                     mt_tensor_device(t), device);
  if (!mt_tensor_is_contiguous(t)) return mt__error(MT_ERR_SHAPE, "dist.topk: %s must be contiguous", name);
  return MT_OK;
}

mt_status mt_dist_topk(const mt_tensor *v, double density, int method, double slack, mt_tensor *idx, mt_tensor *val,
                       int64_t *count) {
  if (!count) return mt__error(MT_ERR_ARG, "dist.topk: count is NULL");
  *count = 0;
  if (!v) return mt__error(MT_ERR_ARG, "dist.topk: v is NULL");
  if (mt_tensor_dtype(v) != MT_F32)
    return mt__error(MT_ERR_DTYPE, "dist.topk: v must be a float32 tensor (a FloatTensor)");
  int device = mt_tensor_device(v);
  if (!mt_tensor_is_contiguous(v)) return mt__error(MT_ERR_SHAPE, "dist.topk: v must be contiguous");
  if (!(density > 0 && density <= 1))
    return mt__error(MT_ERR_ARG, "dist.topk: density must be in (0, 1], got %g", density);
  if (method < MT_TOPK_EXACT || method > MT_TOPK_SAMPLED)
    return mt__error(MT_ERR_ARG, "dist.topk: unknown method %d (0: exact, 1: threshold, 2: trimmed, 3: sampled)",
                     method);
  if (!(slack >= 0 && slack <= 1e6))
    return mt__error(MT_ERR_ARG, "dist.topk: slack must be in [0, 1e6], got %g", slack);
  MT_TRY(check_out(idx, "idx", MT_I32, "int32", device));
  MT_TRY(check_out(val, "val", MT_F32, "float32", device));
  int64_t n = mt_tensor_numel(v), cap = mt_tensor_numel(idx);
  if (cap != mt_tensor_numel(val))
    return mt__error(MT_ERR_SHAPE, "dist.topk: idx and val must have the same number of elements (%lld and %lld)",
                     (long long)cap, (long long)mt_tensor_numel(val));
  /* indices travel as int32 */
  if (n > INT32_MAX)
    return mt__error(MT_ERR_SHAPE, "dist.topk: v has %lld elements, more than int32 indices can address", (long long)n);
  int64_t k = n == 0 ? 0 : (int64_t)ceil(density * (double)n);
  if (n > 0 && k < 1) k = 1;
  if (k > n) k = n;
  int64_t kmax = (int64_t)floor((double)k * (1.0 + slack));
  if (kmax > n) kmax = n;
  static const char *const names[] = {"exact", "threshold", "trimmed", "sampled"};
  _Static_assert(sizeof names / sizeof *names == MT_TOPK_SAMPLED + 1, "a name for every MT_TOPK_ method");
  int64_t need = method == MT_TOPK_THRESHOLD || method == MT_TOPK_SAMPLED ? kmax : k;
  if (cap < need)
    return mt__error(MT_ERR_SHAPE, "dist.topk: idx/val hold %lld elements, the %s method may return %lld",
                     (long long)cap, names[method], (long long)need);
  if (n == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(device, "dist.topk");
  if (!be) return mt_last_status();
  return be->dist_topk(v, k, kmax, method, idx, val, count);
}
