/* log.c - formatting lines for a caller's sink (through gf_strbuf: any
 * length); see gf/log.h. */
#include "gf/log.h"

#include <stdarg.h>
#include <stdlib.h>

#include "gf/strbuf.h"

void gf_logf(const gf_log *log, gf_log_level level, const char *fmt, ...) {
  if (!log || !log->fn) return;
  gf_strbuf b;
  gf_strbuf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  gf_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  char *line = gf_strbuf_take(&b, NULL);
  log->fn(log->user, level,
          line ? line : "(a log line could not be formatted: out of memory)");
  free(line);
}

void gf_log_to_stream(void *user, gf_log_level level, const char *line) {
  (void)level;
  FILE *fp = user;
  if (!fp) return;
  fputs(line, fp);
  fputc('\n', fp);
  fflush(fp);
}
