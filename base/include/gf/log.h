/* log.h - how a gf_ library says something to a person: through a sink the
 * executable owns, never by writing to stderr itself. The library formats a
 * line; the executable's function decides where it goes and how (stderr, a
 * terminal's progress line, a test's buffer).
 *
 * Not an error channel: failures still travel as a gf_status and a gf_err
 * to the caller. This is for what a run reports while it goes on (progress,
 * resumes, warnings that change nothing). */
#ifndef GF_LOG_H
#define GF_LOG_H

#include <stdio.h>

typedef enum gf_log_level {
  GF_LOG_INFO = 0,     /* what happened: resumed, finished, promoted */
  GF_LOG_WARN = 1,     /* something went wrong and the run goes on */
  GF_LOG_ERROR = 2,    /* the reason a run is about to end */
  GF_LOG_PROGRESS = 3, /* a status line that the next one replaces; a sink
                          on a terminal may redraw it in place */
} gf_log_level;

/* Called with one line of text, NUL-terminated, without a trailing newline.
 * May be called from any thread that logs; a sink shared by threads
 * serializes itself. */
typedef void (*gf_log_fn)(void *user, gf_log_level level, const char *line);

/* A sink: the function and its argument, both owned by the caller (the
 * executable or the test). {NULL, NULL, 0} drops every line. */
typedef struct gf_log {
  gf_log_fn fn;
  void *user;
  int live; /* 1: the sink shows GF_LOG_PROGRESS lines in place (a
               terminal), so a library may send short ones often; 0: every
               line stays, so progress comes as full lines, seldom */
} gf_log;

/* Formats a line and hands it to log->fn; nothing when log or log->fn is
 * NULL. Lines of any length (a long one is formatted into a temporary
 * allocation, freed before returning). */
void gf_logf(const gf_log *log, gf_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A ready sink for a stdio stream: user is the FILE *; each line is written
 * with a newline and flushed, progress lines too. For tests and tools that
 * want plain lines. */
void gf_log_to_stream(void *user, gf_log_level level, const char *line);

#endif
