/* python_util.h - the checkout's Python (.venv, deploy/install-deps.sh) for
 * the tests that compare ganflow's files with Python's readers. Test code
 * only (it may exit).
 *
 * The rule of the CI skip gate: a Python that is not there is a skip (77,
 * with the reason), one that is there but cannot import what the test
 * needs is a broken .venv and a failure. */
#ifndef GF_TEST_PYTHON_UTIL_H
#define GF_TEST_PYTHON_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

/* Skips the test (exit 77) when `python` is not an executable; returns 1
 * after a FAIL line when `import <modules>` fails there ("numpy, mlflow"),
 * 0 when it imports. Python's own error goes to stderr as it is. */
static inline int tu_python_ready(const char *python, const char *modules) {
  if (access(python, X_OK) != 0)
    SKIP_TEST("no python at %s (deploy/install-deps.sh makes .venv)", python);
  char cmd[8192];
  int n = snprintf(cmd, sizeof cmd, "'%s' -c 'import %s' >/dev/null", python,
                   modules);
  if (n < 0 || (size_t)n >= sizeof cmd) {
    fprintf(stderr, "FAIL: python path too long: %s\n", python);
    return 1;
  }
  if (system(cmd) != 0) {
    fprintf(stderr, "FAIL: %s is there but cannot import %s (Python's error "
            "above): a broken .venv, not a skip\n", python, modules);
    return 1;
  }
  return 0;
}

#endif
