/* test_base_util.c - gf_base's small utilities: mkdir -p (every level,
 * existing directories, a file in the way, an unwritable parent, a path too
 * long), path joins that refuse to truncate, gf_format, GF_FORMAT_FITS,
 * notes cut with "...", bounded whole-file reads, hex and random UUIDs, the
 * clocks and deadline arithmetic, and the log sink. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/clock.h"
#include "gf/file.h"
#include "gf/fs.h"
#include "gf/log.h"
#include "gf/note.h"
#include "gf/text.h"
#include "gf/uuid.h"

static int is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void test_mkdir_p(const char *tmp) {
  char p[GF_PATH_MAX];
  gf_err err;
  REQUIRE(gf_format(p, sizeof p, NULL, "path", "%s/a/b//c/", tmp) == GF_OK);
  CHECK_INT_EQ(gf_mkdir_p(p, 0755, &err), GF_OK);
  REQUIRE(gf_format(p, sizeof p, NULL, "path", "%s/a/b/c", tmp) == GF_OK);
  CHECK(is_dir(p));
  /* Again: every level exists already. */
  CHECK_INT_EQ(gf_mkdir_p(p, 0755, &err), GF_OK);

  /* A file where a directory should be, at an intermediate level: the
   * error names that level. */
  char file[GF_PATH_MAX];
  REQUIRE(gf_format(file, sizeof file, NULL, "path", "%s/a/f", tmp) == GF_OK);
  tu_write(file, "x", 1);
  REQUIRE(gf_format(p, sizeof p, NULL, "path", "%s/a/f/g/h", tmp) == GF_OK);
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(gf_mkdir_p(p, 0755, &err), GF_EIO);
  CHECKF(strstr(err.msg, file) && strstr(err.msg, "not a directory"), "%s",
         err.msg);
  /* ... and at the last level. */
  CHECK_INT_EQ(gf_mkdir_p(file, 0755, &err), GF_EIO);

  /* An intermediate level that cannot be made (root ignores modes, so
   * only where permissions bite). */
  if (geteuid() != 0) {
    REQUIRE(gf_format(p, sizeof p, NULL, "path", "%s/ro", tmp) == GF_OK);
    REQUIRE(mkdir(p, 0500) == 0);
    REQUIRE(gf_format(p, sizeof p, NULL, "path", "%s/ro/x/y", tmp) == GF_OK);
    CHECK_INT_EQ(gf_mkdir_p(p, 0755, &err), GF_EIO);
    CHECKF(strstr(err.msg, "/ro/x") != NULL, "%s", err.msg);
  }

  CHECK_INT_EQ(gf_mkdir_p("", 0755, &err), GF_EINVAL);
  CHECK_INT_EQ(gf_mkdir_p(NULL, 0755, &err), GF_EINVAL);
  /* Too long for any path buffer: refused before anything is made. */
  size_t n = GF_PATH_MAX + 10;
  char *lng = malloc(n + 1);
  REQUIRE(lng);
  memset(lng, 'd', n);
  lng[0] = '/';
  lng[n] = '\0';
  CHECK_INT_EQ(gf_mkdir_p(lng, 0755, &err), GF_EINVAL);
  CHECKF(strstr(err.msg, "too long") != NULL, "%s", err.msg);
  free(lng);
}

static void test_path_check(void) {
  gf_err err;
  char *p = malloc(GF_PATH_MAX + 1);
  REQUIRE(p);
  /* 4031 bytes and 64 joined: 4095 and the NUL fit; one more does not. */
  memset(p, 'p', 4031);
  p[4031] = '\0';
  CHECK_INT_EQ(gf_path_check("--dir", p, 64, &err), GF_OK);
  p[4031] = 'p';
  p[4032] = '\0';
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(gf_path_check("--dir", p, 64, &err), GF_EINVAL);
  CHECKF(strstr(err.msg, "--dir too long (4032 bytes, at most 4031, to leave "
                "room") != NULL, "%s", err.msg);
  /* A file used as it is: GF_PATH_MAX - 1 bytes. */
  memset(p, 'p', GF_PATH_MAX);
  p[GF_PATH_MAX - 1] = '\0';
  CHECK_INT_EQ(gf_path_check("--file", p, 0, &err), GF_OK);
  p[GF_PATH_MAX - 1] = 'p';
  p[GF_PATH_MAX] = '\0';
  CHECK_INT_EQ(gf_path_check("--file", p, 0, &err), GF_EINVAL);
  CHECKF(strstr(err.msg, "--file too long (4096 bytes, at most 4095)") != NULL,
         "%s", err.msg);
  /* Room for more than any path: nothing fits, not even "". */
  CHECK_INT_EQ(gf_path_check("--x", "", GF_PATH_MAX, &err), GF_EINVAL);
  free(p);
}

static void test_join(void) {
  char buf[16];
  gf_err err;
  CHECK_INT_EQ(gf_path_join(buf, sizeof buf, "dir", "name", &err), GF_OK);
  CHECK_STR_EQ(buf, "dir/name");
  CHECK_INT_EQ(gf_path_join(buf, sizeof buf, "dir/", "name", &err), GF_OK);
  CHECK_STR_EQ(buf, "dir/name");
  CHECK_INT_EQ(gf_path_join(buf, sizeof buf, "", "name", &err), GF_OK);
  CHECK_STR_EQ(buf, "name");
  /* 15 bytes fit in 16; 16 do not, and nothing half-written is left. */
  CHECK_INT_EQ(gf_path_join(buf, sizeof buf, "0123456", "89abcde", &err),
               GF_OK);
  CHECK_STR_EQ(buf, "0123456/89abcde");
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(gf_path_join(buf, sizeof buf, "0123456", "89abcdef", &err),
               GF_EINVAL);
  CHECK_STR_EQ(buf, "");
  CHECKF(strstr(err.msg, "path too long (16 bytes, at most 15)") != NULL,
         "%s", err.msg);

  char *p = gf_path_join_alloc("a", "b");
  CHECK_STR_EQ(p, "a/b");
  free(p);
  p = gf_path_join_alloc("a/", "b");
  CHECK_STR_EQ(p, "a/b");
  free(p);
  p = gf_path_join_alloc("", "b");
  CHECK_STR_EQ(p, "b");
  free(p);
}

static void test_format(void) {
  char buf[8];
  gf_err err;
  CHECK_INT_EQ(gf_format(buf, sizeof buf, &err, "word", "%s-%d", "ab", 12),
               GF_OK);
  CHECK_STR_EQ(buf, "ab-12");
  CHECK_INT_EQ(gf_format(buf, sizeof buf, &err, "word", "%s", "1234567"),
               GF_OK);
  CHECK_INT_EQ(gf_format(buf, sizeof buf, &err, "word", "%s", "12345678"),
               GF_EINVAL);
  CHECK_STR_EQ(buf, "");
  CHECKF(strstr(err.msg, "word too long (8 bytes, at most 7): 1234567") != NULL,
         "%s", err.msg);
  CHECK(gf_fits(7, 8));
  CHECK(!gf_fits(8, 8));
  CHECK(!gf_fits(-1, 8));
}

static void test_format_fits(void) {
  char buf[8];
  GF_FORMAT_FITS(buf, sizeof buf, "%s-%d", "ab", 1234);
  CHECK_STR_EQ(buf, "ab-1234");
  size_t o = strlen(buf);
  GF_FORMAT_FITS(buf + o, sizeof buf - o, "%s", "");
  CHECK_STR_EQ(buf, "ab-1234");
}

static void test_note(void) {
  char buf[8];
  CHECK(gf_note(buf, sizeof buf, "%d", 1234567) == buf);
  CHECK_STR_EQ(buf, "1234567");
  /* one byte too many: the start, then the cut */
  gf_note(buf, sizeof buf, "%d", 12345678);
  CHECK_STR_EQ(buf, "1234...");
  gf_note(buf, 4, "%s", "abcd");
  CHECK_STR_EQ(buf, "...");
  gf_note(buf, 3, "%s", "abcd");
  CHECK_STR_EQ(buf, "ab");
  /* appended: the cut marks the end of the whole buffer */
  gf_note(buf, sizeof buf, "ab");
  gf_note_append(buf, sizeof buf, "%s", "cd");
  CHECK_STR_EQ(buf, "abcd");
  gf_note_append(buf, sizeof buf, "%s", "efgh");
  CHECK_STR_EQ(buf, "abcd...");
  gf_note(buf, sizeof buf, "abcdef");
  gf_note_append(buf, sizeof buf, "%s", "gh");
  CHECK_STR_EQ(buf, "abcd...");
  /* gf_fail writes gf_err.msg with it */
  gf_err err;
  char big[600];
  memset(big, 'z', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  gf_fail(&err, GF_EIO, "%s", big);
  CHECK_INT_EQ(strlen(err.msg), sizeof err.msg - 1);
  CHECK_STR_EQ(err.msg + sizeof err.msg - 4, "...");
}

static void test_read_file(const char *tmp) {
  char path[GF_PATH_MAX];
  REQUIRE(gf_format(path, sizeof path, NULL, "path", "%s/f.txt", tmp) ==
          GF_OK);
  char *buf = NULL;
  size_t len = 99;
  gf_err err;
  /* nothing there */
  CHECK_INT_EQ(gf_read_file(path, 16, &buf, &len, &err), GF_ENOTFOUND);
  CHECK(buf == NULL && len == 0);
  char want[GF_PATH_MAX + 64];
  snprintf(want, sizeof want, "%s: No such file or directory", path);
  CHECK_STR_EQ(err.msg, want);

  /* a file of max bytes: whole, with a NUL after it */
  tu_write(path, "0123456789abcdef", 16);
  CHECKF(gf_read_file(path, 16, &buf, &len, &err) == GF_OK, "%s", err.msg);
  CHECK(buf && len == 16 && memcmp(buf, "0123456789abcdef", 17) == 0);
  free(buf);
  /* one byte more than max */
  CHECK_INT_EQ(gf_read_file(path, 15, &buf, &len, &err), GF_EFORMAT);
  CHECK(buf == NULL && len == 0);
  snprintf(want, sizeof want, "%s: 16 bytes, more than the 15 allowed", path);
  CHECK_STR_EQ(err.msg, want);
  /* empty, and bytes that are not text (a NUL inside) */
  tu_write(path, "", 0);
  CHECK_INT_EQ(gf_read_file(path, 0, &buf, &len, &err), GF_OK);
  CHECK(buf && len == 0 && buf[0] == '\0');
  free(buf);
  tu_write(path, "a\0b", 3);
  CHECK_INT_EQ(gf_read_file(path, 3, &buf, &len, &err), GF_OK);
  CHECK(buf && len == 3 && memcmp(buf, "a\0b\0", 4) == 0);
  free(buf);
  /* larger than the first buffer and than fstat's size would need */
  static char big[100000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
  tu_write(path, big, sizeof big);
  CHECK_INT_EQ(gf_read_file(path, sizeof big, &buf, &len, &err), GF_OK);
  CHECK(buf && len == sizeof big && memcmp(buf, big, sizeof big) == 0 &&
        buf[len] == '\0');
  free(buf);
  /* a directory */
  CHECK_INT_EQ(gf_read_file(tmp, 16, &buf, &len, &err), GF_EINVAL);
  snprintf(want, sizeof want, "%s: not a regular file", tmp);
  CHECK_STR_EQ(err.msg, want);
  /* a file that says size 0 and holds more (read to its end, bounded) */
  if (access("/proc/self/status", R_OK) == 0) {
    CHECK_INT_EQ(gf_read_file("/proc/self/status", 1 << 20, &buf, &len, &err),
                 GF_OK);
    CHECK(buf && len > 0 && strncmp(buf, "Name:", 5) == 0 &&
          strlen(buf) == len);
    free(buf);
    CHECK_INT_EQ(gf_read_file("/proc/self/status", 10, &buf, &len, &err),
                 GF_EFORMAT);
    CHECK_STR_EQ(err.msg,
                 "/proc/self/status: more than the 10 bytes allowed");
    CHECK(buf == NULL);
  }
  /* unreadable (root reads anything: then there is nothing to check) */
  tu_write(path, "x", 1);
  REQUIRE(chmod(path, 0) == 0);
  if (geteuid() != 0) {
    CHECK_INT_EQ(gf_read_file(path, 16, &buf, &len, &err), GF_EIO);
    snprintf(want, sizeof want, "%s: %s", path, strerror(EACCES));
    CHECK_STR_EQ(err.msg, want);
  }
  unlink(path);
}

static void test_hex_and_uuid(void) {
  char hex[9];
  const unsigned char b[4] = {0x00, 0x9f, 0xa0, 0xff};
  gf_hex_encode(b, sizeof b, hex);
  CHECK_STR_EQ(hex, "009fa0ff");
  gf_hex_encode(b, 0, hex);
  CHECK_STR_EQ(hex, "");

  char a[GF_UUID_LEN + 1], c[GF_UUID_LEN + 1];
  gf_err err;
  REQUIRE(gf_uuid4(a, &err) == GF_OK);
  REQUIRE(gf_uuid4(c, &err) == GF_OK);
  CHECK_INT_EQ((int)strlen(a), GF_UUID_LEN);
  CHECK(a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-');
  CHECK(a[14] == '4');                    /* version 4 */
  CHECK(strchr("89ab", a[19]) != NULL);   /* RFC 4122 variant */
  CHECK_INT_EQ((int)strspn(a, "0123456789abcdef-"), GF_UUID_LEN);
  CHECK(strcmp(a, c) != 0);

  char h[GF_UUID_HEX_LEN + 1], k[GF_UUID_HEX_LEN + 1];
  REQUIRE(gf_uuid4_hex(h, &err) == GF_OK);
  REQUIRE(gf_uuid4_hex(k, &err) == GF_OK);
  CHECK_INT_EQ((int)strlen(h), GF_UUID_HEX_LEN);
  CHECK_INT_EQ((int)strspn(h, "0123456789abcdef"), GF_UUID_HEX_LEN);
  CHECK(h[12] == '4' && strchr("89ab", h[16]) != NULL);
  CHECK(strcmp(h, k) != 0);
}

static void test_clock(void) {
  double a = gf_mono_s();
  uint64_t na = gf_mono_ns();
  struct timespec ts = {0, 0}, want;
  /* Wait on the clock itself, with a deadline, for it to move. */
  uint64_t nb = na;
  for (int i = 0; i < 1000000 && nb == na; i++) nb = gf_mono_ns();
  CHECK(nb > na);
  CHECK(gf_mono_s() >= a);
  CHECK(gf_unix_ms() > 1600000000000LL); /* after 2020 */

  ts.tv_sec = 5;
  ts.tv_nsec = 900000000L;
  gf_timespec_add(&ts, 1.25);
  CHECK_INT_EQ(ts.tv_sec, 7);
  CHECK_INT_EQ(ts.tv_nsec, 150000000L);
  want = ts;
  CHECK(!gf_timespec_before(&ts, &want) && !gf_timespec_before(&want, &ts));
  want.tv_nsec++;
  CHECK(gf_timespec_before(&ts, &want));

  struct timespec now, dl;
  clock_gettime(CLOCK_MONOTONIC, &now);
  gf_deadline_after(&dl, CLOCK_MONOTONIC, 2.5);
  CHECK(gf_timespec_before(&now, &dl));
  double d = (double)(dl.tv_sec - now.tv_sec) +
             (double)(dl.tv_nsec - now.tv_nsec) * 1e-9;
  CHECK(d >= 2.5 && d < 3.5);
  CHECK(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
}

static void test_fail_message(void) {
  gf_err err;
  CHECK_INT_EQ(gf_fail(&err, GF_EIO, "disk %d gone", 3), GF_EIO);
  CHECK_INT_EQ(err.code, GF_EIO);
  CHECK_STR_EQ(err.msg, "disk 3 gone");
  /* A message longer than gf_err holds keeps its start, marked as cut. */
  char big[1000];
  memset(big, 'y', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  gf_fail(&err, GF_EINVAL, "start %s", big);
  CHECK_INT_EQ(strlen(err.msg), sizeof err.msg - 1);
  CHECK(strncmp(err.msg, "start yyy", 9) == 0);
  CHECK_STR_EQ(err.msg + sizeof err.msg - 4, "...");
  CHECK_INT_EQ(gf_fail(NULL, GF_ENOMEM, "nobody"), GF_ENOMEM);
}

typedef struct seen {
  int calls;
  gf_log_level level;
  char line[4096];
} seen;

static void sink(void *user, gf_log_level level, const char *line) {
  seen *s = user;
  s->calls++;
  s->level = level;
  snprintf(s->line, sizeof s->line, "%s", line);
}

static void test_log(void) {
  seen s = {0};
  gf_log log = {sink, &s, 0};
  gf_logf(&log, GF_LOG_WARN, "step %d: %s", 7, "slow");
  CHECK_INT_EQ(s.calls, 1);
  CHECK_INT_EQ(s.level, GF_LOG_WARN);
  CHECK_STR_EQ(s.line, "step 7: slow");
  /* A line longer than the formatter's stack buffer arrives whole. */
  char big[3001];
  memset(big, 'x', 3000);
  big[3000] = '\0';
  gf_logf(&log, GF_LOG_INFO, "<%s>", big);
  CHECK_INT_EQ(s.calls, 2);
  CHECK_INT_EQ(strlen(s.line), 3002);
  CHECK(s.line[0] == '<' && s.line[3001] == '>');
  /* No sink: dropped, not a crash. */
  gf_logf(NULL, GF_LOG_ERROR, "nobody");
  gf_log none = {NULL, NULL, 0};
  gf_logf(&none, GF_LOG_ERROR, "nobody");
  CHECK_INT_EQ(s.calls, 2);

  /* The stream sink: one line each, newline added. */
  char tmp[4096];
  tu_mkdtemp(tmp, sizeof tmp);
  char path[GF_PATH_MAX];
  REQUIRE(gf_format(path, sizeof path, NULL, "path", "%s/log.txt", tmp) == GF_OK);
  FILE *fp = fopen(path, "w");
  REQUIRE(fp);
  gf_log to_file = {gf_log_to_stream, fp, 0};
  gf_logf(&to_file, GF_LOG_INFO, "one");
  gf_logf(&to_file, GF_LOG_PROGRESS, "two %d", 2);
  fclose(fp);
  size_t len = 0;
  unsigned char *text = tu_read(path, &len);
  CHECK(text && len == 10 && memcmp(text, "one\ntwo 2\n", 10) == 0);
  free(text);
  tu_rmdir(tmp);
}

int main(void) {
  char tmp[4096];
  tu_mkdtemp(tmp, sizeof tmp);
  test_mkdir_p(tmp);
  test_read_file(tmp);
  tu_rmdir(tmp);
  test_path_check();
  test_join();
  test_format();
  test_format_fits();
  test_note();
  test_hex_and_uuid();
  test_clock();
  test_fail_message();
  test_log();
  return check_report();
}
