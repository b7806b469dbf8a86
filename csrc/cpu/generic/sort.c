/* generic/sort.c: sort.c's order keys of one line, for one dtype (included by sort.c through
 * generate_all.h; generate.h names scalar_t, acc_t, MT_G, MT_LD). */

/* keys of the n elements line[0], line[stride], ..., complemented by flip (descending order), each
 * with its position. line (n) strided, keys (n) */
static void MT_G(make_keys)(const scalar_t *line, int64_t stride, int64_t n, uint64_t flip, kv *keys) {
  for (int64_t i = 0; i < n; i++) {
    acc_t v = MT_LD(line + i * stride);
    keys[i].k = KEY_OF(v) ^ flip;
    keys[i].i = i;
  }
}
