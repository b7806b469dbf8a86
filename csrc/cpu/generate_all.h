/* generate_all.h: includes MT_GENERIC_FILE once per dtype of MT_DTYPES, whose rows give each
 * pass its types (generate.h says what the generic file sees). */
#ifndef MT_GENERIC_FILE
#error "generate_all.h: define MT_GENERIC_FILE (\"generic/<name>.c\") first"
#endif
#include "generate.h"
_Static_assert(mt__gen_all_count == 10, "generate_all.h: MT_DTYPES changed; list the dtypes here");

#define MT_GEN_N f32
#include "generate_one.h"
#define MT_GEN_N f64
#include "generate_one.h"
#define MT_GEN_N f16
#include "generate_one.h"
#define MT_GEN_N bf16
#include "generate_one.h"
#define MT_GEN_N i32
#include "generate_one.h"
#define MT_GEN_N i64
#include "generate_one.h"
#define MT_GEN_N u8
#include "generate_one.h"
#define MT_GEN_N b8
#include "generate_one.h"
#define MT_GEN_N i8
#include "generate_one.h"
#define MT_GEN_N i16
#include "generate_one.h"

#undef MT_GENERIC_FILE
