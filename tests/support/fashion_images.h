/* fashion_images.h - the first images of Fashion-MNIST's test set as
 * bytes, for tests that put real images through a network. Test code
 * only; link zlib. */
#ifndef GF_TEST_FASHION_IMAGES_H
#define GF_TEST_FASHION_IMAGES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "check.h"
#include "fashion.h"

#define FASHION_TEST_IMAGES FASHION "/t10k-images-idx3-ubyte.gz"

/* Test images [0, count) as [count, 1, 28, 28] bytes (malloc'd; the
 * caller frees them). NULL when the file is missing, said on stderr (the
 * caller fails: a missing dataset is a broken machine); a file that is not
 * a u8 IDX or holds fewer images fails the REQUIREs. */
static inline uint8_t *tu_fashion_test_images(int count) {
  gzFile f = gzopen(FASHION_TEST_IMAGES, "rb");
  if (!f) {
    fprintf(stderr, "%s missing: install dataset-fashion-mnist "
            "(deploy/install-deps.sh)\n", FASHION_TEST_IMAGES);
    return NULL;
  }
  unsigned char hdr[16];
  uint8_t *px = malloc((size_t)count * 784);
  REQUIRE(px);
  REQUIRE(gzread(f, hdr, 16) == 16);
  REQUIRE(hdr[2] == 8 && hdr[3] == 3);
  REQUIRE(gzread(f, px, (unsigned)count * 784) == count * 784);
  gzclose(f);
  return px;
}

#endif
