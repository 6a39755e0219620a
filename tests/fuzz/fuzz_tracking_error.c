/* fuzz_tracking_error.c - fuzz target for how the tracking library reads
 * an error answer: mlflow_error_from_answer with the input as the body
 * (JSON {"error_code","message"}, plain text, HTML, binary, anything), for
 * each status class, and mlflow_parse_retry_after on the input's first line
 * (a Retry-After header value: seconds or an HTTP date).
 * Checks what every caller relies on: the message and error_code are
 * NUL-terminated within their arrays and hold no control characters, the
 * status maps as documented, and the Retry-After result is -1 or >= 0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static void check_text(const char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  if (n >= cap) abort(); /* not terminated inside the array */
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == 0x7f) abort(); /* control characters squeezed */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const long statuses[] = {400, 401, 403, 404, 429, 500, 503};
  const char *body = (const char *)data;
  for (size_t k = 0; k < sizeof statuses / sizeof *statuses; k++) {
    mlflow_error err;
    memset(&err, 0x5a, sizeof err); /* garbage in: all of it must be set */
    mlflow_status st = mlflow_error_from_answer(
        "GET runs/get", statuses[k], k & 1 ? "application/json" : "text/plain",
        body, size, &err);
    if (err.status != st || err.http_status != statuses[k]) abort();
    check_text(err.message, sizeof err.message);
    check_text(err.error_code, sizeof err.error_code);
    if (statuses[k] == 401 || statuses[k] == 403) {
      if (st != MLFLOW_E_AUTH) abort();
    } else if (!strcmp(err.error_code, "RESOURCE_DOES_NOT_EXIST") ||
               (statuses[k] == 404 && !err.error_code[0])) {
      if (st != MLFLOW_E_NOT_FOUND) abort();
    } else if (st != MLFLOW_E_HTTP) {
      abort();
    }
    /* NULL err is allowed and must give the same status. */
    if (mlflow_error_from_answer("x", statuses[k], NULL, body, size, NULL) != st)
      abort();
  }
  /* Retry-After: the first line, NUL-terminated, as the header callback
   * hands it over (it keeps the "\r\n"). */
  size_t line = 0;
  while (line < size && data[line] != '\n') line++;
  if (line < size) line++; /* keep the '\n' */
  char *v = malloc(line + 1);
  if (!v) return 0;
  memcpy(v, data, line);
  v[line] = '\0';
  double ra = mlflow_parse_retry_after(v, (time_t)1763800000);
  if (!(ra == -1 || ra >= 0)) abort();
  free(v);
  return 0;
}
