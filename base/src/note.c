/* note.c - messages that show where they were cut; see gf/note.h. Calls
 * nothing of gf_base but inline helpers, so that status.c can use it. */
#include "gf/note.h"

#include <stdio.h>
#include <string.h>

#include "gf/text.h"

/* vsnprintf at buf + at (at < cap), then the cut mark at the end of the
 * whole buf[cap]. */
static char *note_at(char *buf, size_t cap, size_t at, const char *fmt,
                     va_list ap) __attribute__((format(printf, 4, 0)));
static char *note_at(char *buf, size_t cap, size_t at, const char *fmt,
                     va_list ap) {
  if (cap == 0) return buf;
  int n = vsnprintf(buf + at, cap - at, fmt, ap);
  if (n < 0) {
    static const char bad[] = "(unformattable message)";
    n = (int)sizeof bad - 1;
    size_t k = cap - at < sizeof bad ? cap - at - 1 : sizeof bad - 1;
    memcpy(buf + at, bad, k);
    buf[at + k] = '\0';
  }
  if (!gf_fits(n, cap - at) && cap >= 4) memcpy(buf + cap - 4, "...", 4);
  return buf;
}

char *gf_vnote(char *buf, size_t cap, const char *fmt, va_list ap) {
  return note_at(buf, cap, 0, fmt, ap);
}

char *gf_note(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note_at(buf, cap, 0, fmt, ap);
  va_end(ap);
  return buf;
}

char *gf_vnote_append(char *buf, size_t cap, const char *fmt, va_list ap) {
  if (cap == 0) return buf;
  size_t len = strnlen(buf, cap);
  if (len == cap) len = cap - 1; /* not terminated: end it where it stops */
  buf[len] = '\0';
  return note_at(buf, cap, len, fmt, ap);
}

char *gf_note_append(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gf_vnote_append(buf, cap, fmt, ap);
  va_end(ap);
  return buf;
}
