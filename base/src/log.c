/* log.c - formatting lines for a caller's sink; see gf/log.h. */
#include "gf/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void gf_logf(const gf_log *log, gf_log_level level, const char *fmt, ...) {
  if (!log || !log->fn) return;
  char small[1024];
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    va_end(ap2);
    return;
  }
  if ((size_t)n < sizeof small) {
    va_end(ap2);
    log->fn(log->user, level, small);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (big && vsnprintf(big, (size_t)n + 1, fmt, ap2) != n) {
    free(big);
    big = NULL;
  }
  va_end(ap2);
  /* Out of memory: the line as far as it fit, marked as cut. */
  if (!big) memcpy(small + sizeof small - 4, "...", 4);
  log->fn(log->user, level, big ? big : small);
  free(big);
}

void gf_log_to_stream(void *user, gf_log_level level, const char *line) {
  (void)level;
  FILE *fp = user;
  if (!fp) return;
  fputs(line, fp);
  fputc('\n', fp);
  fflush(fp);
}
