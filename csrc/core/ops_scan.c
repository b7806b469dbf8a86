/* ops_scan.c: cumulative sums and products along one dimension (Torch7's cumsum, cumprod).
 * Checks the arguments, sizes the result like the input and makes one backend call. */
#include <string.h>
#include "backend.h"
#include "error.h"

static int same_layout(const mt_tensor *a, const mt_tensor *b) {
  return a->offset == b->offset && a->ndim == b->ndim &&
         !memcmp(a->sizes, b->sizes, (size_t)a->ndim * sizeof a->sizes[0]) &&
         !memcmp(a->strides, b->strides, (size_t)a->ndim * sizeof a->strides[0]);
}

static mt_status scan(int prod, mt_tensor *out, const mt_tensor *a, int dim) {
  const char *op = prod ? "cumprod" : "cumsum";
  MT_CHECK_TENSOR(a, op, "tensor");
  MT_CHECK_TENSOR(out, op, "result tensor");
  int nd = a->ndim ? a->ndim : 1; /* a 0-d tensor scans as one element */
  if (dim < 0 || dim >= nd) {
    char b[128];
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a tensor of size %s (%d-d)", op, dim + 1,
                     mt__shape_str(a, b, sizeof b), a->ndim);
  }
  /* each line is read and written in one pass: the result may be the input itself, but not
   * another view of its memory */
  if (out != a && out->storage && out->storage == a->storage && !same_layout(out, a))
    return mt__error(MT_ERR_ARG, "%s: the result tensor shares memory with the input in another layout", op);
  MT_TRY(mt__prepare_out(out, a->dtype, a->device, a->ndim, a->sizes, op));
  if (mt__numel(a) == 0) return MT_OK;
  const mt_backend *be = mt__backend_for(a->device, op);
  if (!be) return mt_last_status();
  if (a->ndim == 0) return out == a ? MT_OK : be->copy(out, a);
  return be->scan(prod, out, a, dim);
}

mt_status mt_cumsum(mt_tensor *out, const mt_tensor *a, int dim) { return scan(0, out, a, dim); }
mt_status mt_cumprod(mt_tensor *out, const mt_tensor *a, int dim) { return scan(1, out, a, dim); }
