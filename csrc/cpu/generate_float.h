/* generate_float.h: includes MT_GENERIC_FILE once per floating dtype of MT_DTYPES, whose rows
 * give each pass its types (generate.h says what the generic file sees). */
#ifndef MT_GENERIC_FILE
#error "generate_float.h: define MT_GENERIC_FILE (\"generic/<name>.c\") first"
#endif
#include "generate.h"
_Static_assert(mt__gen_float_count == 4, "generate_float.h: MT_DTYPES' floating dtypes changed; list them here");

#define MT_GEN_N f32
#include "generate_one.h"
#define MT_GEN_N f64
#include "generate_one.h"
#define MT_GEN_N f16
#include "generate_one.h"
#define MT_GEN_N bf16
#include "generate_one.h"

#ifndef MT__GEN_KEEP_FILE /* generate_all.h includes the next subset */
#undef MT_GENERIC_FILE
#endif
