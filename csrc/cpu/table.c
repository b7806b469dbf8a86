/* table.c: the CPU backend's op table: every slot of core/backend.h's list, filled with the
 * mt__cpu_ function of the same name. */
#include "cpu.h"

const mt_backend mt__cpu_backend = {.name = "cpu", MT_BACKEND_OPS(MT_BACKEND_ENTRY, mt__cpu_)};
