/* error.c: thread-local last error, so concurrent loader threads do not clobber each other. */
#include <stdarg.h>
#include <stdio.h>
#include "error.h"

static _Thread_local char mt_errbuf[1024];
static _Thread_local mt_status mt_errstatus;

mt_status mt__error(mt_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mt_errbuf, sizeof mt_errbuf, fmt, ap);
  va_end(ap);
  mt_errstatus = st;
  return st;
}

const char *mt_last_error(void) { return mt_errbuf[0] ? mt_errbuf : "no error"; }
mt_status mt_last_status(void) { return mt_errstatus; }
void mt_clear_error(void) {
  mt_errbuf[0] = 0;
  mt_errstatus = MT_OK;
}
