/* png_check FILE [WIDTH HEIGHT]: decodes FILE fully with libpng (the serve
 * tests' st_png_decode) and prints "WIDTH HEIGHT CHANNELS"; with WIDTH and
 * HEIGHT given, exits 1 unless the image has that size. Exit 1 on anything
 * libpng refuses (a truncated or corrupt file). For tests/image.sh, which
 * checks what the container image served. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "file_util.h"
#include "serve_test_util.h"

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: png_check FILE [WIDTH HEIGHT]\n");
    return 2;
  }
  size_t len = 0;
  unsigned char *data = tu_read(argv[1], &len); /* owned here */
  int w = 0, h = 0, c = 0;
  uint8_t *px = NULL; /* owned here */
  int rc = st_png_decode(data, len, &w, &h, &c, &px);
  free(data);
  free(px);
  if (rc != 0) {
    fprintf(stderr, "png_check: %s: libpng refuses it\n", argv[1]);
    return 1;
  }
  printf("%d %d %d\n", w, h, c);
  if (argc == 4 && (w != atoi(argv[2]) || h != atoi(argv[3]))) {
    fprintf(stderr, "png_check: %s is %dx%d, not %sx%s\n", argv[1], w, h,
            argv[2], argv[3]);
    return 1;
  }
  return 0;
}
