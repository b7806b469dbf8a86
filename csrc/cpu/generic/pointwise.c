/* generic/pointwise.c: pointwise.c's fill, masked_fill, arange and converting copies into one
 * dtype (included through generate_all.h). */

/* fill: elements [begin, end) of the iteration (t) := *(double *)value in this dtype */
static void MT_G(fill)(const mt_iter *it, int64_t begin, int64_t end, void *value) {
  scalar_t fill_value;
  MT_ST(&fill_value, PW_CV(*(double *)value));
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(scalar_t)) {
      scalar_t *out = (scalar_t *)run.p[0];
      for (int64_t i = 0; i < run.n; i++) out[i] = fill_value;
    } else {
      for (int64_t i = 0; i < run.n; i++) *(scalar_t *)(run.p[0] + i * s[0]) = fill_value;
    }
  }
}

/* masked_fill: over [begin, end) of the iteration (t, mask u8 or bool), t := *(double *)value
 * where mask is set */
static void MT_G(masked_fill)(const mt_iter *it, int64_t begin, int64_t end, void *value) {
  scalar_t fill_value;
  MT_ST(&fill_value, PW_CV(*(double *)value));
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(scalar_t) && s[1] == 1) {
      scalar_t *out = (scalar_t *)run.p[0];
      const uint8_t *mask = (const uint8_t *)run.p[1];
      for (int64_t i = 0; i < run.n; i++) out[i] = mask[i] ? fill_value : out[i];
    } else {
      for (int64_t i = 0; i < run.n; i++)
        if (*(const uint8_t *)(run.p[1] + i * s[1])) *(scalar_t *)(run.p[0] + i * s[0]) = fill_value;
    }
  }
}

/* a copy into this dtype from another over [begin, end) of the iteration (out, src): load
 * reads one source element (src_size bytes) converted to acc_t; contiguous or strided runs */
MT_ALWAYS_INLINE void MT_G(convert_runs)(const mt_iter *it, int64_t begin, int64_t end, int64_t src_size,
                                         acc_t (*load)(const char *src)) {
  const int64_t *s = it->strides[0];
  mt_iter_run run;
  for (mt_iter_first(it, &run, begin, end); run.n > 0; mt_iter_next(it, &run)) {
    if (s[0] == sizeof(scalar_t) && s[1] == src_size) {
      scalar_t *out = (scalar_t *)run.p[0];
      const char *src = run.p[1];
      for (int64_t i = 0; i < run.n; i++) MT_ST(out + i, load(src + i * src_size));
    } else {
      for (int64_t i = 0; i < run.n; i++) MT_ST((scalar_t *)(run.p[0] + i * s[0]), load(run.p[1] + i * s[1]));
    }
  }
}

/* arange: out[i] = start + i * step over a contiguous out of numel elements */
static void MT_G(arange)(scalar_t *out, int64_t numel, double start, double step) {
#pragma omp parallel for if (numel > MT_PARALLEL_GRAIN)
  for (int64_t i = 0; i < numel; i++) {
    double x = start + (double)i * step;
    MT_ST(out + i, PW_CV(x));
  }
}
