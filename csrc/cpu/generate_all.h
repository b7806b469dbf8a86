/* generate_all.h: includes MT_GENERIC_FILE once per dtype of MT_DTYPES: the floating passes of
 * generate_float.h, then the integer ones of generate_int.h (generate.h says what the generic
 * file sees). */
#ifndef MT_GENERIC_FILE
#error "generate_all.h: define MT_GENERIC_FILE (\"generic/<name>.c\") first"
#endif
#include "generate.h"
_Static_assert(mt__gen_all_count == mt__gen_float_count + mt__gen_int_count,
               "generate_all.h: MT_DTYPES has a dtype neither floating nor integer; give it a pass");

#define MT__GEN_KEEP_FILE
#include "generate_float.h"
#undef MT__GEN_KEEP_FILE
#include "generate_int.h"
