/* fuzz_mlmodel.c - fuzz target for the MLmodel parser (YAML through
 * libyaml, from a buffer, no file access): errors, never crashes, and on
 * success every field and listed file is readable and safe as a name. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gf/mlmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_mlmodel m;
  gf_err err;
  if (gf_mlmodel_parse((const char *)data, size, &m, &err) == GF_OK) {
    for (size_t i = 0; i < m.n_files; i++) {
      const char *name = m.files[i].name;
      if (strchr(name, '/') || strstr(name, "..") || !gf_sha256_hex_valid(m.files[i].sha256))
        __builtin_trap();
    }
    if (gf_model_config_validate(&m.config, &err) != GF_OK) __builtin_trap();
  }
  gf_mlmodel_free(&m);
  return 0;
}
