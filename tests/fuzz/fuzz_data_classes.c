/* fuzz_data_classes.c - fuzz target for the class-name file parser
 * (classes.txt, batches.meta.txt; gf_data_class_names_parse) and the
 * name-or-index lookup over what it parsed. Input: the file itself. Any
 * input must parse or fail cleanly; parsed names must be 1..256 distinct
 * names that pass the name rule, each found again by the lookup at its own
 * index, and the whole input, looked up as a name, must not crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/data.h"
#include "gf/data_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char **names = (char **)1;
  int n = -1;
  gf_err err;
  err.msg[0] = '\0';
  if (gf_data_class_names_parse(data, size, "classes.txt", &names, &n,
                                &err) != GF_OK) {
    if (names || n != 0 || !err.msg[0]) __builtin_trap();
    return 0;
  }
  if (!names || n < 1 || n > GF_DATA_MAX_CLASSES) __builtin_trap();
  uint8_t label = 0;
  gf_dataset ds;
  memset(&ds, 0, sizeof ds);
  ds.labels = &label;
  ds.num_classes = n;
  ds.class_names = names;
  for (int k = 0; k < n; k++) {
    if (gf_data_class_name_check(names[k], &err) != GF_OK) __builtin_trap();
    int got = -1;
    if (gf_dataset_class_index(&ds, names[k], &got, &err) != GF_OK ||
        got != k) {
      __builtin_trap(); /* distinct names: each one is found at its index */
    }
  }
  char *whole = malloc(size + 1);
  if (whole) {
    memcpy(whole, data, size);
    whole[size] = '\0';
    int got = -1;
    gf_status st = gf_dataset_class_index(&ds, whole, &got, &err);
    if (st == GF_OK ? (got < 0 || got >= n) : got != -1) __builtin_trap();
    free(whole);
  }
  free(names);
  return 0;
}
