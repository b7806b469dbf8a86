/* ops_mode.c: the public entry point of torch.mode. The lines along dim are first sorted by the
 * backend's stable sort into temporaries; a second backend call then scans each sorted line for
 * its longest run. Sorting first also means the outputs may alias the input: it is not read
 * after the sort. */
#include <string.h>
#include "backend.h"
#include "error.h"

#define SHAPE(t, b) mt__shape_str((t), (b), sizeof(b))

mt_status mt_mode(mt_tensor *values, mt_tensor *indices, const mt_tensor *src, int dim, int64_t base) {
  const char *op = "mode";
  MT_CHECK_TENSOR(src, op, "input");
  MT_CHECK_TENSOR(values, op, "values result");
  MT_CHECK_TENSOR(indices, op, "indices result");
  char b[128];
  if (src->ndim == 0 || dim < 0 || dim >= src->ndim)
    return mt__error(MT_ERR_INDEX, "%s: dimension %d out of range for a tensor of size %s (%d dimensions)", op, dim + 1,
                     SHAPE(src, b), src->ndim);
  if (src->sizes[dim] == 0)
    return mt__error(MT_ERR_SHAPE, "%s: dimension %d of the tensor of size %s is empty", op, dim + 1, SHAPE(src, b));
  if (values == indices || (values->storage && values->storage == indices->storage))
    return mt__error(MT_ERR_ARG, "%s: values and indices must be different tensors", op);
  const mt_backend *be = mt__backend_for(src->device, op);
  if (!be) return mt_last_status();

  mt_tensor *sorted = NULL, *order = NULL;
  mt_status st = mt__tensor_empty(&sorted, src->dtype, src->device, src->ndim, src->sizes);
  if (st == MT_OK) st = mt__tensor_empty(&order, MT_I64, src->device, src->ndim, src->sizes);
  if (st == MT_OK) st = be->sort(sorted, order, src, dim, 0, base);
  int64_t sizes[MT_MAX_DIMS];
  memcpy(sizes, src->sizes, sizeof sizes);
  sizes[dim] = 1;
  if (st == MT_OK) st = mt__prepare_out(values, src->dtype, src->device, src->ndim, sizes, op);
  if (st == MT_OK) st = mt__prepare_out(indices, MT_I64, src->device, src->ndim, sizes, op);
  if (st == MT_OK) st = be->mode_lines(values, indices, sorted, order, dim);
  mt_tensor_release(sorted);
  mt_tensor_release(order);
  return st;
}
