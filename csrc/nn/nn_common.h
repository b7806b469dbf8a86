/* nn_common.h: what the nn entry points (the other files of csrc/nn) share. Each entry point checks its
 * arguments here, in one place for every device, then calls exactly one function of the
 * backend table (csrc/core/backend.h) with contiguous tensors; a result whose caller tensor is
 * not contiguous (or aliases an input the backend reads) goes through a temporary copied back. */
#ifndef MT_NN_COMMON_H
#define MT_NN_COMMON_H
#include "../core/backend.h"
#include "../core/error.h"

/* t must be a valid tensor of a floating dtype: "op: what has dtype D, expected a floating dtype" */
mt_status mt__nn_check_float(const mt_tensor *t, const char *op, const char *what);
/* t (named what) must be on input's device with input's dtype */
mt_status mt__nn_check_same(const mt_tensor *t, const mt_tensor *input, const char *op, const char *what);
/* ... and also have the given size */
mt_status mt__nn_check_like(const mt_tensor *t, const mt_tensor *input, int ndim, const int64_t *sizes, const char *op,
                            const char *what);
/* The backend serving t's device (NULL with the error set). */
const mt_backend *mt__nn_backend(const mt_tensor *t, const char *op);

/* A contiguous version of t: a new alias when it already is one, else a copy. */
mt_status mt__nn_contig(const mt_tensor *t, mt_tensor **out, const char *op);
/* A contiguous buffer to write the result for out into: an alias of out, or (out not
 * contiguous, or out is `avoid1` / `avoid2`, inputs the backend still reads) a temporary,
 * holding out's values when keep_values is set. mt__nn_result_done copies a temporary back
 * (when st is MT_OK) and releases buf (NULL: nothing to do); it returns the final status. */
mt_status mt__nn_result_buf(mt_tensor *out, const mt_tensor *avoid1, const mt_tensor *avoid2, int keep_values,
                            mt_tensor **buf, const char *op);
mt_status mt__nn_result_done(mt_tensor *out, mt_tensor *buf, mt_status st);
/* Channels-last (PyTorch's memory format): a 4-d input stored channels-last gives results
 * stored channels-last, with the values of the NCHW computation. mt__nn_cl: whether t is such
 * an input. mt__nn_follow: a module result `out` (already sized, dense: contiguous or
 * channels-last, not the input itself) restrided in place to channels-last (cl) or NCHW, so it
 * follows its input from call to call. mt__nn_dense / mt__nn_result_dense are mt__nn_contig /
 * mt__nn_result_buf for layout cl: dense channels-last tensors when cl is set. */
int mt__nn_cl(const mt_tensor *t);
void mt__nn_follow(mt_tensor *out, int cl);
mt_status mt__nn_dense(const mt_tensor *t, int cl, mt_tensor **out, const char *op);
mt_status mt__nn_result_dense(mt_tensor *out, int cl, int keep_values, mt_tensor **buf, const char *op);
/* Release the non-NULL tensors of ts. */
void mt__nn_release(mt_tensor **ts, int n);
#endif
