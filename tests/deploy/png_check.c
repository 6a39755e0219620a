/* png_check FILE [WIDTH HEIGHT]: decodes FILE fully with libpng (the
 * simplified png_image API, to 8-bit RGBA) and prints "WIDTH HEIGHT
 * CHANNELS"; with WIDTH and HEIGHT given, exits 1 unless the image has that
 * size. Exit 1 on anything libpng refuses (a truncated or corrupt file).
 * For tests/image.sh, which checks what the container image served. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: png_check FILE [WIDTH HEIGHT]\n");
    return 2;
  }
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, argv[1])) {
    fprintf(stderr, "png_check: %s: %s\n", argv[1], img.message);
    return 1;
  }
  unsigned channels = PNG_IMAGE_SAMPLE_CHANNELS(img.format);
  img.format = PNG_FORMAT_RGBA;
  size_t size = PNG_IMAGE_SIZE(img);
  unsigned char *px = malloc(size); /* owned here, freed below */
  if (!px) {
    png_image_free(&img);
    fprintf(stderr, "png_check: out of memory (%zu bytes)\n", size);
    return 1;
  }
  int ok = png_image_finish_read(&img, NULL, px, 0, NULL);
  free(px);
  if (!ok) {
    fprintf(stderr, "png_check: %s: %s\n", argv[1], img.message);
    return 1;
  }
  printf("%u %u %u\n", img.width, img.height, channels);
  if (argc == 4 && (img.width != strtoul(argv[2], NULL, 10) ||
                    img.height != strtoul(argv[3], NULL, 10))) {
    fprintf(stderr, "png_check: %s is %ux%u, not %sx%s\n", argv[1], img.width,
            img.height, argv[2], argv[3]);
    return 1;
  }
  return 0;
}
