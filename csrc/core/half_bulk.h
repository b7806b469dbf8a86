/* half_bulk.h: float16 <-> float32 conversion of contiguous runs, eight values per instruction
 * with F16C where the CPU has it (checked at run time), else the scalar mt_half_to_float /
 * mt_float_to_half of dtype.h. Both give the same bits (round to nearest even, NaN quieted with
 * its payload kept), so results never depend on which path ran. */
#ifndef MT_HALF_BULK_H
#define MT_HALF_BULK_H
#include <stddef.h>
#include <stdint.h>

void mt__half_to_float_n(float *dst, const uint16_t *src, size_t n);
void mt__float_to_half_n(uint16_t *dst, const float *src, size_t n);

#endif
