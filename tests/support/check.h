/* check.h - the assertion macros every ganflow test uses.
 *
 * A failed CHECK prints file:line and the expression, counts the failure and
 * carries on, so one run reports every miss; a test's main() ends with
 * `return check_report();`, which exits non-zero when anything failed.
 * REQUIRE stops the test at once (for preconditions the rest depends on).
 * Exit code 77 tells ctest the test was skipped (SKIP_RETURN_CODE 77);
 * SKIP_TEST says why on one line.
 * Not for library code: libraries return errors, they never print or exit. */
#ifndef GF_TEST_CHECK_H
#define GF_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One counter per test executable; static storage in each test's own TU. */
static int check_failures_;
static int check_count_;

#define CHECK(cond)                                                        \
  do {                                                                     \
    check_count_++;                                                        \
    if (!(cond)) {                                                         \
      check_failures_++;                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                      \
    }                                                                      \
  } while (0)

#define CHECKF(cond, ...)                                                  \
  do {                                                                     \
    check_count_++;                                                        \
    if (!(cond)) {                                                         \
      check_failures_++;                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__,     \
              #cond);                                                      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)

#define CHECK_INT_EQ(a, b)                                                 \
  do {                                                                     \
    long long a_ = (long long)(a), b_ = (long long)(b);                    \
    CHECKF(a_ == b_, "%lld != %lld", a_, b_);                              \
  } while (0)

#define CHECK_STR_EQ(a, b)                                                 \
  do {                                                                     \
    const char *a_ = (a), *b_ = (b);                                       \
    CHECKF(a_ && b_ && strcmp(a_, b_) == 0, "\"%s\" != \"%s\"",            \
           a_ ? a_ : "(null)", b_ ? b_ : "(null)");                        \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                              \
  do {                                                                     \
    double a_ = (double)(a), b_ = (double)(b);                             \
    CHECKF(fabs(a_ - b_) <= (tol), "%.9g vs %.9g (tol %g)", a_, b_,        \
           (double)(tol));                                                 \
  } while (0)

#define REQUIRE(cond)                                                      \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__,   \
              #cond);                                                      \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* Skips the test: prints "SKIP: <reason>" on one line (newlines in the
 * reason become spaces) and exits 77. The line is what the CI skip gate
 * (tests/ci/ctest_skips.py) reports; under CI=true any skip outside the
 * `gpu` label fails the run. Only for "not installed or not present here"
 * (no GPU, no .venv): something installed that fails to start or to import
 * is a failure, not a skip. */
#define SKIP_TEST(...) check_skip_(__VA_ARGS__)

/* The main() of a test of the state checkers (gf/invariant.h) in a build
 * without them (GF_STATE_CHECKS off: Release): says so and passes, since
 * there is nothing that could fire. */
#define STATE_CHECKS_OFF_MAIN()                                            \
  int main(void) {                                                         \
    puts("state checks are off in this build (GF_STATE_CHECKS: Debug "    \
         "and the sanitizer build): nothing to check");                    \
    return 0;                                                              \
  }

__attribute__((format(printf, 1, 2), noreturn)) static inline void
check_skip_(const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  for (char *p = why; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  fprintf(stderr, "SKIP: %s\n", why);
  exit(77);
}

static inline int check_report(void) {
  fprintf(stderr, "%d checks, %d failed\n", check_count_, check_failures_);
  return check_failures_ ? 1 : 0;
}

#endif
