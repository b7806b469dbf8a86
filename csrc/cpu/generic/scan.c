/* generic/scan.c: scan.c's cumulative sum and product lines, for one dtype (included by scan.c
 * through generate_all.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* every line along the scanned dim: the iterator runs over the shape with that dim cut to 1, i.e.
 * over the first element of each line; a line has n elements, byte strides so (out) and sx (a).
 * The float dtypes accumulate in double, the integers in int64_t with two's complement
 * wrap-around (PW_ADD, PW_MUL). out and a (..., n, ...) */
static void MT_G(scan_lines)(const mt_iter *it, int prod, int64_t n, int64_t so, int64_t sx) {
  MT_ITER_RUNS(it, lines, p, s, {
    for (int64_t l = 0; l < lines; l++) {
      char *o = p[0] + l * s[0];
      const char *x = p[1] + l * s[1];
      if (_Generic((acc_t)0, int64_t : 1, default : 0)) {
        int64_t acc = (int64_t)prod;
        for (int64_t i = 0; i < n; i++) {
          int64_t v = (int64_t)MT_LD((const scalar_t *)(x + i * sx));
          acc = prod ? PW_MUL(acc, v) : PW_ADD(acc, v);
          MT_ST((scalar_t *)(o + i * so), acc);
        }
      } else {
        double acc = (double)prod;
        for (int64_t i = 0; i < n; i++) {
          double v = (double)MT_LD((const scalar_t *)(x + i * sx));
          acc = prod ? PW_MUL(acc, v) : PW_ADD(acc, v);
          MT_ST((scalar_t *)(o + i * so), acc);
        }
      }
    }
  });
}
