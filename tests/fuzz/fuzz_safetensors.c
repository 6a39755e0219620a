/* fuzz_safetensors.c - fuzz target for the strict safetensors parser
 * (buffer path) and the checkpoint metadata reader on top of it: any input
 * must give GF_OK or an error; on GF_OK every tensor's bytes, name and
 * metadata must be readable, and gf_ckpt_meta_from_file must either refuse
 * the metadata or return values inside their documented ranges. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gf/ckpt_meta.h"
#include "gf/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (unsigned flags = 0; flags <= GF_ST_VERIFY_SHA256; flags += GF_ST_VERIFY_SHA256) {
    gf_st_file f;
    gf_err err;
    if (gf_st_parse(&f, data, size, flags, &err) != GF_OK) continue;
    volatile unsigned sum = 0;
    for (size_t i = 0; i < f.n_tensors; i++) {
      const gf_st_tensor *t = &f.tensors[i];
      if (gf_st_find(&f, t->name) != t) __builtin_trap();
      for (size_t k = 0; k < t->nbytes; k++) sum += ((const uint8_t *)t->data)[k];
      sum += (unsigned)strlen(t->name);
    }
    for (size_t i = 0; i < f.n_meta; i++) {
      if (gf_st_meta_get(&f, f.meta[i].key) != f.meta[i].value) __builtin_trap();
      sum += (unsigned)strlen(f.meta[i].value);
    }
    (void)sum;
    gf_ckpt_meta m;
    if (gf_ckpt_meta_from_file(&f, &m, &err) == GF_OK) {
      if (m.format_version != GF_CKPT_FORMAT_VERSION || m.step < 0 ||
          m.epoch < 0 || m.epoch_offset < 0 || m.world_size < 1 ||
          memchr(m.run_id, 0, sizeof m.run_id) == NULL ||
          memchr(m.recipe, 0, sizeof m.recipe) == NULL)
        __builtin_trap();
      for (const char *r = m.recipe; *r; r++)
        if (*r < 0x20 || *r > 0x7e) __builtin_trap();
    }
    gf_st_file_free(&f);
  }
  return 0;
}
