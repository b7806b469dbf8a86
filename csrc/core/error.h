/* error.h: the one error path. Set a message and return its status:
 *   return mt__error(MT_ERR_SHAPE, "add: sizes %s and %s do not broadcast", a, b); */
#ifndef MT_CORE_ERROR_H
#define MT_CORE_ERROR_H
#include "../moontorch.h"

#if defined(__GNUC__)
#define MT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MT_PRINTF(a, b)
#endif

mt_status mt__error(mt_status st, const char *fmt, ...) MT_PRINTF(2, 3);

#define MT_TRY(expr)                    \
  do {                                  \
    mt_status mt__st = (expr);          \
    if (mt__st != MT_OK) return mt__st; \
  } while (0)

/* argument checks used by every public entry point */
#define MT_CHECK_TENSOR(t, op, name)                                        \
  do {                                                                      \
    if (!(t)) return mt__error(MT_ERR_ARG, "%s: %s is NULL", (op), (name)); \
  } while (0)

#endif
