/* fuzz_mlmodel.c - fuzz target for the MLmodel parser (YAML through
 * libyaml, from a buffer, no file access): errors, never crashes, and on
 * success every field and listed file is readable, every listed file a
 * relative path inside the directory (no empty, "." or ".." component),
 * every signature entry a tensor or a column of a known type, class names
 * (when present) num_classes valid distinct names that the lookup finds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gf/class_name.h"
#include "gf/mlmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_mlmodel m;
  gf_err err;
  if (gf_mlmodel_parse((const char *)data, size, &m, &err) == GF_OK) {
    for (size_t i = 0; i < m.n_files; i++) {
      const char *name = m.files[i].name;
      size_t n = strlen(name);
      if (n == 0 || name[0] == '/' || name[n - 1] == '/' || strstr(name, "//") ||
          strstr(name, "..") || strncmp(name, "./", 2) == 0 || strstr(name, "/./") ||
          strchr(name, '\\') || !gf_sha256_hex_valid(m.files[i].sha256))
        __builtin_trap();
    }
    const gf_mlmodel_spec *sets[2] = {m.sig_inputs, m.sig_outputs};
    size_t counts[2] = {m.n_sig_inputs, m.n_sig_outputs};
    for (int k = 0; k < 2; k++)
      for (size_t i = 0; i < counts[k]; i++) {
        const gf_mlmodel_spec *t = &sets[k][i];
        int tensor = strcmp(t->type, "tensor") == 0;
        if (!t->type[0] || t->ndim < 0 || t->ndim > GF_MLMODEL_SIG_MAX_DIMS ||
            (!tensor && t->ndim != 0) || (tensor && !t->dtype[0]) ||
            (strcmp(t->type, "array") == 0 && !t->dtype[0]) ||
            (t->name && !t->name[0]))
          __builtin_trap();
      }
    if (m.pyfunc_python && !m.pyfunc_loader) __builtin_trap();
    if ((m.class_names == NULL) != (m.n_class_names == 0) ||
        (m.class_names && m.n_class_names != m.config.num_classes) ||
        (m.class_names && gf_class_names_check((const char *const *)m.class_names,
                                               m.n_class_names, &err) != GF_OK))
      __builtin_trap();
    for (int k = 0; k < m.n_class_names; k++) {
      int got = -1;
      if (gf_mlmodel_class_index(&m, m.class_names[k], &got, &err) != GF_OK || got != k)
        __builtin_trap();
    }
    if (gf_model_config_validate(&m.config, &err) != GF_OK) __builtin_trap();
  }
  gf_mlmodel_free(&m);
  return 0;
}
