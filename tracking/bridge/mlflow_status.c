/* mlflow_status.c - mlflow_status -> gf_status; see gf/mlflow_status.h. */
#include "gf/mlflow_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

gf_status gf_status_from_mlflow(mlflow_status s) {
  switch (s) {
    case MLFLOW_OK: return GF_OK;
    case MLFLOW_E_INVALID: return GF_EINVAL;
    case MLFLOW_E_NOMEM: return GF_ENOMEM;
    case MLFLOW_E_NOT_FOUND: return GF_ENOTFOUND;
    case MLFLOW_E_UNSUPPORTED: return GF_EUNSUPPORTED;
    case MLFLOW_E_PROTOCOL:
    case MLFLOW_E_UNSAFE_PATH: return GF_EFORMAT;
    case MLFLOW_E_STATE: return GF_ESTATE;
    case MLFLOW_E_CONNECT:
    case MLFLOW_E_HTTP:
    case MLFLOW_E_IO:
    case MLFLOW_E_TIMEOUT:
    case MLFLOW_E_FULL:
    case MLFLOW_E_AUTH: break;
  }
  return GF_EIO;
}

gf_status gf_fail_mlflow(gf_err *err, const mlflow_error *me, const char *fmt,
                         ...) {
  gf_status st = gf_status_from_mlflow(me->status);
  if (st == GF_OK) st = GF_EIO;
  if (!fmt) return gf_fail(err, st, "%s", me->message);
  /* The context, of any length, into a temporary allocation. */
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *what = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (what && vsnprintf(what, (size_t)n + 1, fmt, ap2) != n) {
    free(what);
    what = NULL;
  }
  va_end(ap2);
  if (!what)
    return gf_fail(err, st, "(context not formatted: %s): %s",
                   n < 0 ? "bad format" : "out of memory", me->message);
  gf_status r = gf_fail(err, st, "%s: %s", what, me->message);
  free(what);
  return r;
}
