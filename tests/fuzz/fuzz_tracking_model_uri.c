/* fuzz_tracking_model_uri.c - fuzz target for mlflow_model_uri_parse, the
 * reader of models:/NAME/VERSION, models:/NAME@ALIAS and models:/NAME/latest
 * (the input, NUL-terminated, is the URI).
 * Checks the documented result: on success a non-empty name without '/',
 * and exactly one of a decimal version, a valid alias, or latest; on failure
 * an INVALID error and an all-zero struct. Frees everything. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlflow/mlflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *uri) {
  mlflow_model_uri u;
  mlflow_error err;
  mlflow_status st = mlflow_model_uri_parse(uri, &u, &err);
  if (st == MLFLOW_OK) {
    if (strncmp(uri, "models:/", 8) != 0) abort();
    if (!u.name || !u.name[0] || strchr(u.name, '/')) abort();
    int kinds = (u.version != NULL) + (u.alias != NULL) + (u.latest != 0);
    if (kinds != 1) abort();
    if (u.version) {
      if (!u.version[0]) abort();
      for (const char *p = u.version; *p; p++)
        if (!isdigit((unsigned char)*p)) abort();
    }
    if (u.alias && !mlflow_alias_is_valid(u.alias)) abort();
    /* The parts come from the URI: name, then '/' or '@', then the rest. */
    size_t nl = strlen(u.name);
    if (strncmp(uri + 8, u.name, nl) != 0) abort();
    char sep = uri[8 + nl];
    if (u.alias ? sep != '@' : sep != '/') abort();
    const char *rest = uri + 8 + nl + 1;
    if (strcmp(rest, u.alias ? u.alias : u.version ? u.version : "latest"))
      abort();
  } else {
    mlflow_model_uri zero;
    memset(&zero, 0, sizeof zero);
    if (memcmp(&u, &zero, sizeof u) != 0) abort();
    if (err.status != st || !err.message[0]) abort();
    if (st != MLFLOW_E_INVALID && st != MLFLOW_E_NOMEM) abort();
  }
  mlflow_model_uri_free(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 9);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  check(s);
  /* The same bytes after the scheme, so most inputs reach the parser. */
  memcpy(s, "models:/", 8);
  memcpy(s + 8, data, size);
  s[size + 8] = '\0';
  check(s);
  free(s);
  return 0;
}
