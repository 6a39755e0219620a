/* fuzz_tracking_path.c - fuzz target for the two gatekeepers of names that
 * reach the file system or the server: mlflow_path_is_safe (artifact paths
 * from the server or the caller) and mlflow_validate_key (metric, param and
 * tag keys). The input, NUL-terminated, is the path or key.
 * Each result is compared with a straightforward re-statement of the
 * documented rule, so a difference in either direction aborts:
 *   path: non-empty, relative, '/'-separated components that are neither
 *         empty, "." nor "..", no backslash or control character;
 *   key:  1..250 chars of [A-Za-z0-9_ -./:], no "..", no leading '/'. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlflow/mlflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ref_path_safe(const char *p) {
  size_t n = strlen(p);
  if (n == 0 || p[0] == '/') return 0;
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && p[i] != '/') {
      unsigned char ch = (unsigned char)p[i];
      if (ch < 0x20 || ch == 0x7f || ch == '\\') return 0;
      continue;
    }
    size_t len = i - start;
    if (len == 0) return 0;
    if (len == 1 && p[start] == '.') return 0;
    if (len == 2 && p[start] == '.' && p[start + 1] == '.') return 0;
    start = i + 1;
  }
  return 1;
}

static int ref_key_valid(const char *k) {
  size_t n = strlen(k);
  if (n == 0 || n > 250 || k[0] == '/' || strstr(k, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = k[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
          c == ' ' || c == '/' || c == ':'))
      return 0;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  int safe = mlflow_path_is_safe(s);
  if (safe != 0 && safe != 1) abort();
  if (safe != ref_path_safe(s)) abort();
  mlflow_error err;
  mlflow_status st = mlflow_validate_key(s, &err);
  if ((st == MLFLOW_OK) != ref_key_valid(s)) abort();
  if (st != MLFLOW_OK && (st != MLFLOW_E_INVALID || err.status != st ||
                          strnlen(err.message, sizeof err.message) >=
                              sizeof err.message))
    abort();
  if (mlflow_path_is_safe(NULL) != 0) abort();
  free(s);
  return 0;
}
