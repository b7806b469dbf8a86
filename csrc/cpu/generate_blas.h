/* generate_blas.h: includes MT_GENERIC_FILE for float32 and float64, the dtypes BLAS and LAPACK
 * compute in (generate.h says what the generic file sees). */
#ifndef MT_GENERIC_FILE
#error "generate_blas.h: define MT_GENERIC_FILE (\"generic/<name>.c\") first"
#endif
#include "generate.h"

#define MT_GEN_N f32
#include "generate_one.h"
#define MT_GEN_N f64
#include "generate_one.h"

#undef MT_GENERIC_FILE
