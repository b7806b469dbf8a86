/* generate_raw.h: includes MT_GENERIC_FILE once per element width (1, 2, 4 and 8 bytes), for
 * kernels that move elements without reading them as numbers. Inside the file raw_t is
 * uint<RAW_BITS>_t and RAW_G(name) is name<RAW_BITS> (copy_raw -> copy_raw16); the file ends
 * with #undef RAW_BITS. Needs pointwise.h (PW_CAT). */
#ifndef MT_GENERIC_FILE
#error "generate_raw.h: define MT_GENERIC_FILE (\"generic/<name>.c\") first"
#endif
#define RAW_G(name) PW_CAT(name, RAW_BITS)
#define raw_t PW_CAT(PW_CAT(uint, RAW_BITS), _t)

#define RAW_BITS 8
#include MT_GENERIC_FILE
#define RAW_BITS 16
#include MT_GENERIC_FILE
#define RAW_BITS 32
#include MT_GENERIC_FILE
#define RAW_BITS 64
#include MT_GENERIC_FILE

#undef raw_t
#undef RAW_G
#undef MT_GENERIC_FILE
