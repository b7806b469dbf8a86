/* generate_int.h: includes MT_GENERIC_FILE once per integer dtype of MT_DTYPES, bool included,
 * whose rows give each pass its types (generate.h says what the generic file sees). */
#ifndef MT_GENERIC_FILE
#error "generate_int.h: define MT_GENERIC_FILE (\"generic/<name>.c\") first"
#endif
#include "generate.h"
_Static_assert(mt__gen_int_count == 6, "generate_int.h: MT_DTYPES' integer dtypes changed; list them here");

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

#ifndef MT__GEN_KEEP_FILE /* generate_all.h includes the next subset */
#undef MT_GENERIC_FILE
#endif
