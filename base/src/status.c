/* status.c - gf_err filling; see gf/status.h. */
#include "gf/status.h"

#include "gf/note.h"

gf_status gf_fail(gf_err *err, gf_status code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    /* A message longer than msg keeps its start and says it was cut. */
    gf_vnote(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
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
