/* fuzz_data_cifar.c - fuzz target for the CIFAR-10 record reader on a
 * memory buffer. Input: byte 0 picks the model geometry
 * (fuzz_data_common.h); the rest is the contents of one data_batch_N.bin. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_data_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  gf_data_options o = fuzz_geometry(data[0]);
  gf_dataset ds;
  gf_err err;
  if (gf_data_cifar_load_mem(&ds, data + 1, size - 1, "batch", &o, &err) ==
      GF_OK) {
    fuzz_check_dataset(&ds, &o);
    if (ds.num_classes != 10) __builtin_trap();
  } else if (ds.pixels || ds.labels || !err.msg[0]) {
    __builtin_trap();
  }
  gf_dataset_free(&ds);
  return 0;
}
