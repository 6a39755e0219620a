/* mlflow_status.c - mlflow_status -> gf_status; see gf/mlflow_status.h. */
#include "gf/mlflow_status.h"

#include <stdarg.h>
#include <stdio.h>

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
  /* The context, as much of it as gf_err holds: a longer one also makes
   * the whole message longer than msg, which gf_fail ends in "..." (the cut
   * shows). */
  char what[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (n < 0)
    return gf_fail(err, st, "(context not formatted): %s", me->message);
  return gf_fail(err, st, "%s: %s", what, me->message);
}
