/* generate.h: TH's generic-file pattern. A kernel is written once, as plain C on real lines, in
 * csrc/cpu/generic/<name>.c over the names below; its parent file includes it once per dtype
 *
 *   #define MT_GENERIC_FILE "generic/nn_loss.c"
 *   #include "generate_float.h"  // f32, f64, f16, bf16; generate_all.h: every dtype;
 *                                // generate_int.h: the integers and bool; generate_blas.h: f32, f64;
 *                                // generate_raw.h: by element width, for moves (raw_t, RAW_G)
 *
 * and dispatches on the dtype with the list, the one place a macro remains:
 *
 *   #define SOFTMAX_CASE(E, N, T, CT) case E: softmax_rows_##N((const T *)xp, (T *)yp, n); break;
 *   switch (x->dtype) { MT_FLOAT_DTYPE_LIST(SOFTMAX_CASE) default: break; }
 *
 * Inside a generic file, for the dtype of the pass:
 *   scalar_t      the storage type (float, double, uint16_t for half and bfloat16, int32_t, ...)
 *   acc_t         the compute type (float for the halves, int64_t for the integers)
 *   MT_G(name)    name_<dtype>, the pass's function name (softmax_rows -> softmax_rows_f16)
 *   MT_LD(p)      *p read as acc_t;  MT_ST(p, v): v stored into *p, rounded to the storage type
 *   MT_GEN_DTYPE  the dtype's enum, an mt_dtype (MT_F16)
 * A subset no generate header covers is a run of `#define MT_GEN_N <name>` + `#include
 * "generate_one.h"` in the parent.
 * The types come from MT_DTYPES' rows (typedefs below); the generate headers name each pass by
 * its short name and assert their counts against the list, and the dispatch calls a function per
 * row of the list, so a dtype missing from a pass or typed otherwise fails to compile. */
#ifndef MT_CPU_GENERATE_H
#define MT_CPU_GENERATE_H
#include "../core/dtype.h"

#define MT__GEN_CAT2(a, b) a##_##b
#define MT__GEN_CAT(a, b) MT__GEN_CAT2(a, b)
#define MT__GEN_LD2(n, p) mt_ld_##n(p)
#define MT__GEN_LD(n, p) MT__GEN_LD2(n, p)
#define MT__GEN_ST2(n, p, v) mt_st_##n(p, v)
#define MT__GEN_ST(n, p, v) MT__GEN_ST2(n, p, v)
#define MT_G(name) MT__GEN_CAT(name, MT_GEN_N)
#define MT_LD(p) MT__GEN_LD(MT_GEN_N, p)
#define MT_ST(p, v) MT__GEN_ST(MT_GEN_N, p, v)

/* each dtype's types and enum under its short name, from the one list: mt_scalar_f16 is uint16_t,
 * mt_acc_f16 float, mt_dtype_of_f16 MT_F16 */
#define MT__GEN_TYPES(E, N, T, CT) \
  typedef T mt_scalar_##N;         \
  typedef CT mt_acc_##N;           \
  enum { mt_dtype_of_##N = E };
MT_DTYPE_LIST(MT__GEN_TYPES)

/* counts of MT_DTYPES' rows, for the generate headers' checks */
#define MT__GEN_ONE(E, N, T, CT) +1
enum {
  mt__gen_float_count = 0 MT_FLOAT_DTYPE_LIST(MT__GEN_ONE),
  mt__gen_int_count = 0 MT_INT_DTYPE_LIST(MT__GEN_ONE),
  mt__gen_all_count = 0 MT_DTYPE_LIST(MT__GEN_ONE)
};
#endif
