/* note.h - formatting a message into a fixed buffer that may cut it: the
 * start is kept and a cut text ends in "...", so that it never passes for
 * the whole one. For reasons, notes and error texts a reader sees (gf_fail
 * writes gf_err.msg with it).
 *
 * Not for text anything parses, opens or compares (a path, a key, a
 * number): those must fit or be refused, with gf_format or GF_FORMAT_FITS
 * (gf/text.h). */
#ifndef GF_NOTE_H
#define GF_NOTE_H

#include <stdarg.h>
#include <stddef.h>

/* printf into buf[cap] (nothing when cap is 0). A text longer than cap - 1 bytes keeps
 * its first cap - 4 and ends in "..." (with cap < 4, just its start); one
 * vsnprintf cannot format is "(unformattable message)", cut alike.
 * Returns buf. Allocates nothing. */
char *gf_note(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
char *gf_vnote(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The same, appended to the NUL-terminated text already in buf[cap]: when
 * the whole does not fit, the last 3 bytes of buf become "..." (cap >= 4),
 * whatever the appended part left. Returns buf. */
char *gf_note_append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
char *gf_vnote_append(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
