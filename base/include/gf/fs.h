/* fs.h - paths and directories for the gf_ libraries and executables:
 * mkdir -p with an error for every level, and path joins that refuse to
 * truncate.
 *
 * Not a file-writing API: crash-safe replacement is gf/atomic_file.h. */
#ifndef GF_FS_H
#define GF_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "gf/status.h"

/* The longest path, with its NUL, that ganflow keeps in a fixed buffer
 * (Linux's PATH_MAX). Paths from flags, the environment and servers that
 * would not fit are refused with GF_EINVAL, never cut short. */
#define GF_PATH_MAX 4096

/* GF_OK when path, with `room` more bytes joined after it (the names made
 * under a directory, '/' included; 0 for a file used as it is), fits a
 * path of GF_PATH_MAX bytes with its NUL: strlen(path) + room <
 * GF_PATH_MAX. Otherwise GF_EINVAL naming `what` (the flag or setting the
 * path came from), its length, the most it may have and its start. For
 * refusing a path at the flag that gave it, before anything joins to it. */
gf_status gf_path_check(const char *what, const char *path, size_t room,
                        gf_err *err);

/* mkdir -p: creates path and each missing parent with `mode` (before the
 * umask). A level that exists as a directory is fine; one that exists as
 * something else, or cannot be made, is GF_EIO naming that level and the
 * reason. GF_EINVAL for an empty path or one of GF_PATH_MAX bytes or more.
 * Allocates nothing. */
gf_status gf_mkdir_p(const char *path, mode_t mode, gf_err *err);

/* Writes dir "/" name into buf[cap] (a single '/' between them, none added
 * when dir is "" or already ends in '/'). GF_EINVAL naming the path when it
 * does not fit (buf then holds ""). */
gf_status gf_path_join(char *buf, size_t cap, const char *dir,
                       const char *name, gf_err *err);

/* The same join into a new string: returns a malloc'd "dir/name" that the
 * caller frees, or NULL when out of memory. Any length. */
char *gf_path_join_alloc(const char *dir, const char *name);

/* Removes dir and what is under it, at most 8 levels deep; links are
 * removed, never followed; a name too long to join stays (and so does its
 * folder). Best effort, for the directories a command wrote itself. */
void gf_rm_tree(const char *dir);

#endif
