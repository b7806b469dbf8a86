/* generate_one.h: one pass of generate_float.h or generate_all.h: MT_GENERIC_FILE compiled for
 * the dtype whose short name is MT_GEN_N (no include guard: it is included once per dtype). */
#define scalar_t MT__GEN_CAT(mt_scalar, MT_GEN_N)
#define acc_t MT__GEN_CAT(mt_acc, MT_GEN_N)
#define MT_GEN_DTYPE ((mt_dtype)MT__GEN_CAT(mt_dtype_of, MT_GEN_N))
#include MT_GENERIC_FILE
#undef scalar_t
#undef acc_t
#undef MT_GEN_DTYPE
#undef MT_GEN_N
