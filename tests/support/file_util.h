/* file_util.h - file helpers shared by the tests: temporary directories,
 * tree removal, whole-file read/write, a text with one part replaced. Test
 * code only (it may exit). */
#ifndef GF_TEST_FILE_UTIL_H
#define GF_TEST_FILE_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* Creates a fresh directory under $TMPDIR (or /tmp) into buf. */
static inline void tu_mkdtemp(char *buf, size_t cap) {
  const char *base = getenv("TMPDIR");
  snprintf(buf, cap, "%s/gf_test_XXXXXX", base && *base ? base : "/tmp");
  REQUIRE(mkdtemp(buf) != NULL);
}

/* Removes dir and everything under it; links are removed, not followed. */
static inline void tu_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    int len = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (len < 0 || (size_t)len >= sizeof path) continue; /* not ours */
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      tu_rmdir(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* Makes dir an empty directory (removed first when it exists; missing
 * parents are created). */
static inline void tu_fresh_dir(const char *dir) {
  tu_rmdir(dir);
  char path[4096];
  int len = snprintf(path, sizeof path, "%s", dir);
  REQUIRE(len > 0 && (size_t)len < sizeof path);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(path, 0755); /* exists already, or the next mkdir says why */
    *p = '/';
  }
  REQUIRE(mkdir(path, 0755) == 0);
}

/* Number of entries in dir whose name contains needle. */
static inline int tu_count_names(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, needle)) n++;
  closedir(d);
  return n;
}

/* Reads a whole file into a malloc'd buffer (exact size, so ASan sees
 * over-reads); exits the test on failure. Caller frees. */
static inline unsigned char *tu_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  REQUIRE(f != NULL);
  REQUIRE(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  REQUIRE(n >= 0);
  rewind(f);
  unsigned char *buf = malloc(n ? (size_t)n : 1);
  REQUIRE(buf != NULL);
  REQUIRE(fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static inline void tu_write(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f != NULL);
  REQUIRE(len == 0 || fwrite(data, 1, len, f) == len);
  REQUIRE(fclose(f) == 0);
}

/* The file at dir/name as a NUL-terminated string (caller frees); exits
 * the test when it cannot be read. */
static inline char *tu_read_text(const char *dir, const char *name) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  size_t len = 0;
  unsigned char *b = tu_read(p, &len);
  char *s = malloc(len + 1);
  REQUIRE(s != NULL);
  memcpy(s, b, len);
  s[len] = '\0';
  free(b);
  return s;
}

/* A malloc'd copy of s with the first `from` (which s must hold) replaced
 * by `to`. */
static inline char *tu_replace(const char *s, const char *from,
                               const char *to) {
  const char *at = strstr(s, from);
  REQUIRE(at != NULL);
  size_t a = (size_t)(at - s), f = strlen(from), t = strlen(to), n = strlen(s);
  char *r = malloc(n - f + t + 1);
  REQUIRE(r != NULL);
  memcpy(r, s, a);
  memcpy(r + a, to, t);
  memcpy(r + a + t, at + f, n - a - f + 1);
  return r;
}

#endif
