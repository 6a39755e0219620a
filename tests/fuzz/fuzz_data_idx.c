/* fuzz_data_idx.c - fuzz target for the IDX reader on memory buffers.
 * Input: byte 0 picks the model geometry (fuzz_data_common.h), bytes 1-2
 * (little-endian) the length of the image file; the image file follows,
 * then the label file. Any input must load or fail cleanly; a load must
 * satisfy the dataset invariants. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_data_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  gf_data_options o = fuzz_geometry(data[0]);
  size_t ilen = (size_t)data[1] | (size_t)data[2] << 8;
  data += 3;
  size -= 3;
  if (ilen > size) ilen = size;
  gf_dataset ds;
  gf_err err;
  if (gf_data_idx_load_mem(&ds, data, ilen, "images", data + ilen, size - ilen,
                           "labels", &o, &err) == GF_OK) {
    fuzz_check_dataset(&ds, &o);
  } else if (ds.pixels || ds.labels || !err.msg[0]) {
    __builtin_trap(); /* failures leave the dataset empty and say why */
  }
  gf_dataset_free(&ds);
  return 0;
}
