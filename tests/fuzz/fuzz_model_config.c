/* fuzz_model_config.c - fuzz target for the model config JSON parser: any
 * input gives an error or a valid config that survives a to_json/from_json
 * round trip unchanged. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_model_config c, back;
  gf_err err;
  if (gf_model_config_from_json((const char *)data, size, &c, &err) != GF_OK) return 0;
  char *json = NULL;
  if (gf_model_config_to_json(&c, &json, &err) != GF_OK) __builtin_trap();
  if (gf_model_config_from_json(json, strlen(json), &back, &err) != GF_OK ||
      !gf_model_config_equal(&c, &back))
    __builtin_trap();
  free(json);
  return 0;
}
