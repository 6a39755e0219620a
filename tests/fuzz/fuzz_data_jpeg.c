/* fuzz_data_jpeg.c - fuzz target for the JPEG decoder on memory buffers
 * (libpng/libjpeg errors caught per decode). The whole input is the file;
 * a decoded image must have a sane shape and convert to a geometry picked
 * by the input's length (fuzz_data_common.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_data_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_image im;
  gf_err err;
  if (gf_data_jpeg_decode(data, size, "input.jpeg", &im, &err) == GF_OK) {
    fuzz_check_image(&im, (uint8_t)size);
  } else if (im.px || !err.msg[0]) {
    __builtin_trap();
  }
  gf_image_free(&im);
  return 0;
}
