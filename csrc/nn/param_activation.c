/* param_activation.c: the activations whose negative slope is a parameter or a random draw:
 * nn.PReLU (learnt slopes, one shared or one per plane) and nn.RReLU in training (slopes drawn
 * from U(lower, upper) by the generator, kept in `noise` for the backward pass). Checks here;
 * the loops are the backends' prelu_* and rrelu_forward. Formulas as Torch7's THNN:
 * y = x > 0 ? x : w x, dx = x > 0 ? dy : w dy, dw += scale sum over x <= 0 of x dy. */
#include "nn_common.h"

#define PR "nn.PReLU"
#define RR "nn.RReLU"

/* outer x C x inner of the input against weight: the planes are dimension 0 of a vector and
 * dimension 1 of anything larger; a one-element weight is shared by all elements (C = 1, the
 * last dimension as inner so the gradWeight partial sums stay short) */
static mt_status prelu_geom(const mt_tensor *input, const mt_tensor *weight, int64_t *outer, int64_t *C,
                            int64_t *inner) {
  char b1[64], b2[64];
  MT_TRY(mt__nn_check_float(input, PR, "input"));
  MT_CHECK_TENSOR(weight, PR, "weight");
  MT_TRY(mt__nn_check_same(weight, input, PR, "weight"));
  int64_t n = mt__numel(input);
  if (input->ndim < 1) return mt__error(MT_ERR_SHAPE, PR ": expected a non-empty input, got a 0-d tensor");
  if (weight->ndim != 1)
    return mt__error(MT_ERR_SHAPE, PR ": weight must be 1-d, got size %s", mt__shape_str(weight, b1, sizeof b1));
  int64_t last = input->sizes[input->ndim - 1];
  if (weight->sizes[0] == 1) {
    *C = 1, *inner = last > 0 ? last : 1, *outer = last > 0 ? n / last : 0;
    return MT_OK;
  }
  int pd = input->ndim > 1 ? 1 : 0;
  if (input->sizes[pd] != weight->sizes[0])
    return mt__error(MT_ERR_SHAPE, PR ": %lld slopes but the input (size %s) has %lld planes in dimension %d",
                     (long long)weight->sizes[0], mt__shape_str(input, b2, sizeof b2), (long long)input->sizes[pd],
                     pd + 1);
  *C = weight->sizes[0];
  *outer = pd ? input->sizes[0] : 1;
  *inner = 1;
  for (int d = pd + 1; d < input->ndim; d++) *inner *= input->sizes[d];
  return MT_OK;
}

mt_status mt_nn_prelu_forward(mt_tensor *out, const mt_tensor *input, const mt_tensor *weight) {
  MT_CHECK_TENSOR(input, PR, "input");
  MT_CHECK_TENSOR(out, PR, "output");
  int64_t outer = 0, C = 0, inner = 0;
  MT_TRY(prelu_geom(input, weight, &outer, &C, &inner));
  if (out != input) MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, PR));
  const mt_backend *be = mt__nn_backend(input, PR);
  if (!be) return mt_last_status();
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* x, w, y */
  mt_status st = mt__nn_contig(input, &t[0], PR);
  if (st == MT_OK) st = mt__nn_contig(weight, &t[1], PR);
  if (st == MT_OK) st = mt__nn_result_buf(out, weight, NULL, 0, &t[2], PR);
  if (st == MT_OK) {
    if (outer * C * inner > 0) st = be->prelu_forward(t[2], t[0], t[1], outer, C, inner);
    st = mt__nn_result_done(out, t[2], st);
    t[2] = NULL;
  }
  mt__nn_release(t, 3);
  return st;
}

mt_status mt_nn_prelu_backward(mt_tensor *gradInput, mt_tensor *gradWeight, const mt_tensor *gradOutput,
                               const mt_tensor *input, const mt_tensor *weight, double scale) {
  MT_CHECK_TENSOR(input, PR, "input");
  MT_CHECK_TENSOR(gradOutput, PR, "gradOutput");
  int64_t outer = 0, C = 0, inner = 0;
  MT_TRY(prelu_geom(input, weight, &outer, &C, &inner));
  MT_TRY(mt__nn_check_like(gradOutput, input, input->ndim, input->sizes, PR, "gradOutput"));
  if (gradWeight) {
    MT_TRY(mt__nn_check_like(gradWeight, input, 1, weight->sizes, PR, "gradWeight"));
    if (!mt__is_contiguous(gradWeight)) return mt__error(MT_ERR_ARG, PR ": gradWeight must be contiguous");
  }
  if (gradInput && gradInput != gradOutput)
    MT_TRY(mt__prepare_out(gradInput, input->dtype, input->device, input->ndim, input->sizes, PR));
  const mt_backend *be = mt__nn_backend(input, PR);
  if (!be) return mt_last_status();
  mt_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* x, w, g, r */
  mt_status st = mt__nn_contig(input, &t[0], PR);
  if (st == MT_OK) st = mt__nn_contig(weight, &t[1], PR);
  if (st == MT_OK) st = mt__nn_contig(gradOutput, &t[2], PR);
  /* in place on gradOutput is fine (elementwise), but never over the input or weight, which
   * the gradWeight pass may still read */
  if (st == MT_OK && gradInput) st = mt__nn_result_buf(gradInput, input, weight, 0, &t[3], PR);
  if (st == MT_OK) {
    if (outer * C * inner > 0) st = be->prelu_backward(t[3], gradWeight, t[2], t[0], t[1], scale, outer, C, inner);
    if (gradInput) st = mt__nn_result_done(gradInput, t[3], st);
    t[3] = NULL;
  }
  mt__nn_release(t, 4);
  return st;
}

mt_status mt_nn_rrelu_forward(mt_tensor *out, mt_tensor *noise, const mt_tensor *input, mt_generator *g, double lower,
                              double upper) {
  MT_CHECK_TENSOR(input, RR, "input");
  MT_CHECK_TENSOR(out, RR, "output");
  MT_CHECK_TENSOR(noise, RR, "noise");
  if (!g) return mt__error(MT_ERR_ARG, RR ": generator is NULL");
  MT_TRY(mt__nn_check_float(input, RR, "input"));
  if (!(0 <= lower && lower <= upper) || upper - upper != 0)
    return mt__error(MT_ERR_ARG, RR ": expected finite 0 <= lower <= upper, got %g and %g", lower, upper);
  if (noise == input || noise == out) return mt__error(MT_ERR_ARG, RR ": noise must not be the input or the output");
  if (out != input) MT_TRY(mt__prepare_out(out, input->dtype, input->device, input->ndim, input->sizes, RR));
  MT_TRY(mt__prepare_out(noise, input->dtype, input->device, input->ndim, input->sizes, RR));
  const mt_backend *be = mt__nn_backend(input, RR);
  if (!be) return mt_last_status();
  int64_t n = mt__numel(input);
  mt_tensor *t[3] = {NULL, NULL, NULL}; /* x, y, noise */
  mt_status st = mt__nn_contig(input, &t[0], RR);
  if (st == MT_OK) st = mt__nn_result_buf(out, NULL, NULL, 0, &t[1], RR);
  if (st == MT_OK) st = mt__nn_result_buf(noise, NULL, NULL, 0, &t[2], RR);
  if (st == MT_OK) {
    if (n > 0) st = be->rrelu_forward(t[1], t[2], t[0], g->seed, g->offset, lower, upper);
    /* element i draws from counter offset + i, positive or not, so the stream moves as a
     * uniform() over the input would and the draws do not depend on the signs or threads */
    if (st == MT_OK) g->offset += (uint64_t)n;
    st = mt__nn_result_done(out, t[1], st);
    st = mt__nn_result_done(noise, t[2], st);
    t[1] = t[2] = NULL;
  }
  mt__nn_release(t, 3);
  return st;
}
