/* file.h - reading a whole file, bounded: the one way the gf_ libraries and
 * executables take in a small file they were pointed at (a price table, a
 * capacity file, an MLmodel, a token, a checkpoint's bytes), with one
 * wording for what can go wrong.
 *
 * Not for streams or files of any size (read those piece by piece), nor
 * for writing: crash-safe replacement is gf/atomic_file.h. */
#ifndef GF_FILE_H
#define GF_FILE_H

#include <stddef.h>

#include "gf/status.h"

/* Reads the regular file at path, at most max bytes of it, into a new
 * buffer. On GF_OK, *out is malloc'd and the caller owns it (free()); it
 * holds the *len bytes of the file and a NUL after them, so text can be
 * used as a string (the bytes themselves may hold NULs). The file is read
 * to its end, not to the size fstat gave: one that grows while it is read
 * is caught, and one that reports size 0 (/proc) is read whole.
 *
 * On failure *out is NULL, *len 0, and err names the file:
 *   GF_ENOTFOUND  "PATH: No such file or directory" (nothing at path)
 *   GF_EIO        "PATH: <strerror>" (cannot be opened or read)
 *   GF_EINVAL     "PATH: not a regular file" (a directory, a FIFO...)
 *   GF_EFORMAT    "PATH: N bytes, more than the MAX allowed", or
 *                 "PATH: more than the MAX bytes allowed" when it grew
 *   GF_ENOMEM     "PATH: out of memory (N bytes)"
 * Callers add what the file is for ("price file %s", "--token-file %s"). */
gf_status gf_read_file(const char *path, size_t max, char **out, size_t *len,
                       gf_err *err);

#endif
