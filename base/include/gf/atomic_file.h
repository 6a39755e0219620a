/* atomic_file.h - crash-safe file replacement: write to a temporary file in
 * the destination's directory, fflush + fsync, rename over the destination,
 * fsync the directory (DESIGN §4.2). A reader sees the old file or the new
 * one, never a torn one. Used by the safetensors writer, the MLflow model
 * directory writer, and anyone else who replaces files (checkpoints,
 * outboxes). Not a locking mechanism: two writers of one path race. */
#ifndef GF_ATOMIC_FILE_H
#define GF_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "gf/status.h"

/* A file being written. All fields are owned by the struct; between
 * gf_atomic_open and gf_atomic_commit/abort, `fp` is an open stream on the
 * temporary file (write to it with fwrite/fprintf). */
typedef struct gf_atomic_file {
  FILE *fp;         /* stream on tmp_path; NULL when idle */
  char *tmp_path;   /* "<path>.tmp.XXXXXX", malloc'd; NULL when idle */
  char *final_path; /* copy of the destination path, malloc'd */
} gf_atomic_file;

/* Creates the temporary file next to `path` (mode 0644). Allocates the two
 * path strings, freed by commit or abort. On failure af is left idle. */
gf_status gf_atomic_open(gf_atomic_file *af, const char *path, gf_err *err);
/* Checks the stream for write errors, fflush, fsync, fclose, rename onto
 * the destination, fsync the directory. Always leaves af idle; on failure
 * the temporary file is removed and the destination is untouched. */
gf_status gf_atomic_commit(gf_atomic_file *af, gf_err *err);
/* Closes and removes the temporary file and frees af's strings. Accepts
 * NULL and an idle af. */
void gf_atomic_abort(gf_atomic_file *af);

/* Writes len bytes to path atomically (open, fwrite, commit). */
gf_status gf_atomic_write_file(const char *path, const void *data, size_t len,
                               gf_err *err);
/* fsyncs the directory that contains path (its dirname). */
gf_status gf_fsync_parent_dir(const char *path, gf_err *err);

#endif
