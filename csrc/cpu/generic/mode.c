/* generic/mode.c: mode.c's scan of one sorted line, for one dtype (included by mode.c through
 * generate_all.h; generate.h names scalar_t, acc_t, MT_G, MT_LD, MT_ST). */

/* the longest run of equal values in the sorted line (n elements, stride): its value stored in
 * *value, the position in the line of its last element returned (the first such run on a tie).
 * line (n) strided */
static int64_t MT_G(longest_run)(const scalar_t *line, int64_t n, int64_t stride, scalar_t *value) {
  acc_t best = MT_LD(line), cur = best;
  int64_t best_len = 0, run = 0, best_at = 0;
  for (int64_t i = 0; i < n; i++) {
    acc_t v = MT_LD(line + i * stride);
    run = (i > 0 && SAME(v, cur)) ? run + 1 : 1;
    cur = v;
    /* a run is judged at its last element, where it is complete */
    if ((i == n - 1 || !SAME(MT_LD(line + (i + 1) * stride), v)) && run > best_len)
      best = v, best_len = run, best_at = i;
  }
  MT_ST(value, best);
  return best_at;
}
