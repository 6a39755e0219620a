/* status.h - the error convention of the gf_ libraries (kernels, model,
 * trainer, serve).
 *
 * Every fallible function returns a gf_status (GF_OK == 0) and, on failure,
 * fills the gf_err the caller owns (it may pass NULL when it does not want
 * the text). Libraries never print and never exit; only a main() decides to
 * stop. gf_err is a plain value: no allocation, safe to copy. */
#ifndef GF_STATUS_H
#define GF_STATUS_H

#include <stdarg.h>
#include <stddef.h>

typedef enum gf_status {
  GF_OK = 0,
  GF_EINVAL = -1,     /* bad argument or configuration */
  GF_ENOMEM = -2,     /* allocation failed */
  GF_EIO = -3,        /* file or OS error */
  GF_EFORMAT = -4,    /* malformed input (file, JSON, header) */
  GF_EUNSUPPORTED = -5, /* valid but not supported here (dtype, backend) */
  GF_EDEVICE = -6,    /* accelerator or library (oneDNN, CUDA) failure */
  GF_EINTEGRITY = -7, /* checksum or digest mismatch */
  GF_ENOTFOUND = -8,  /* a named thing does not exist */
  GF_ESTATE = -9,     /* call not valid in the object's current state */
  GF_ETIMEOUT = -10,  /* a peer or device did not answer in time */
} gf_status;

typedef struct gf_err {
  gf_status code;      /* the status that was returned */
  char msg[512];       /* human-readable, NUL-terminated; names the culprit;
                          a longer message keeps its start and ends "..." */
} gf_err;

/* Fills err (if non-NULL) with code and a printf-formatted message; returns
 * code so that `return gf_fail(err, GF_EINVAL, "...", ...);` reads well. */
gf_status gf_fail(gf_err *err, gf_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Static name of a status ("GF_EINVAL"); never NULL. */
const char *gf_status_name(gf_status s);

/* GF_TRY(expr): evaluates expr, a gf_status, once; when it is not GF_OK,
 * returns it from the enclosing function (which returns gf_status). The
 * callee has already filled err; GF_TRY adds nothing to it and frees
 * nothing, so use it only where an early return leaks nothing. Foreign
 * statuses (CUDA, cuBLAS, cuDNN, oneDNN) have their own checks, which
 * convert them and record file and line. */
#define GF_TRY(expr)                            \
  do {                                          \
    gf_status gf_try_st_ = (expr);              \
    if (gf_try_st_ != GF_OK) return gf_try_st_; \
  } while (0)

#endif
