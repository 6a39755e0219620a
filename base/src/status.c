/* status.c - gf_err filling; see gf/status.h. */
#include "gf/status.h"

#include <stdio.h>
#include <string.h>

gf_status gf_fail(gf_err *err, gf_status code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* A message longer than msg keeps its start and says it was cut. */
    if (n < 0)
      memcpy(err->msg, "(unformattable message)", 24);
    else if ((size_t)n >= sizeof err->msg)
      memcpy(err->msg + sizeof err->msg - 4, "...", 4);
    err->code = code;
  }
  return code;
}

const char *gf_status_name(gf_status s) {
  switch (s) {
  case GF_OK: return "GF_OK";
  case GF_EINVAL: return "GF_EINVAL";
  case GF_ENOMEM: return "GF_ENOMEM";
  case GF_EIO: return "GF_EIO";
  case GF_EFORMAT: return "GF_EFORMAT";
  case GF_EUNSUPPORTED: return "GF_EUNSUPPORTED";
  case GF_EDEVICE: return "GF_EDEVICE";
  case GF_EINTEGRITY: return "GF_EINTEGRITY";
  case GF_ENOTFOUND: return "GF_ENOTFOUND";
  case GF_ESTATE: return "GF_ESTATE";
  case GF_ETIMEOUT: return "GF_ETIMEOUT";
  }
  return "GF_UNKNOWN";
}
