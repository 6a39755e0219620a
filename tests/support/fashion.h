/* fashion.h - where the tests that train find Fashion-MNIST (the Debian
 * package dataset-fashion-mnist, which deploy/install-deps.sh installs),
 * and the check that it is there. Test code only. */
#ifndef GF_TEST_FASHION_H
#define GF_TEST_FASHION_H

#include <stdio.h>
#include <sys/stat.h>

#define FASHION "/usr/share/datasets/fashion-mnist"

/* 1 when FASHION holds the training images; else says on stderr what to
 * install and returns 0 (the caller fails: a missing dataset is a broken
 * machine, not a reason to skip). */
static inline int tu_have_fashion(void) {
  struct stat sb;
  if (stat(FASHION "/train-images-idx3-ubyte.gz", &sb) == 0) return 1;
  fprintf(stderr, "%s missing: install dataset-fashion-mnist "
          "(deploy/install-deps.sh)\n", FASHION);
  return 0;
}

#endif
