/* make_model_dir.c - writes an MLflow model directory of an initialised
 * (untrained) generator, for timing its forward where no MLflow server
 * and no training run are at hand (a lent GPU machine):
 *   make_model_dir DIR mlp|dcgan [SIZE [CHANNELS]] [SEED]
 * The weights are the papers' initialisation from SEED (1); the directory
 * is what ganflow-train writes (gf_mlmodel_write, every digest listed).
 * Exit status: 0 written, 1 error, 2 usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_dir_util.h"

int main(int argc, char **argv) {
  if (argc < 3 || argc > 6 ||
      (strcmp(argv[2], "mlp") != 0 && strcmp(argv[2], "dcgan") != 0)) {
    fprintf(stderr, "usage: make_model_dir DIR mlp|dcgan [SIZE [CHANNELS]] "
                    "[SEED]\n");
    return 2;
  }
  gf_arch arch = strcmp(argv[2], "mlp") == 0 ? GF_ARCH_MLP : GF_ARCH_DCGAN;
  gf_model_config cfg;
  gf_model_config_default(&cfg, arch);
  if (argc > 3) cfg.image_height = cfg.image_width = atoi(argv[3]);
  if (argc > 4) cfg.image_channels = atoi(argv[4]);
  uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
  gf_err err = {0};
  if (gf_model_config_validate(&cfg, &err) != GF_OK) {
    fprintf(stderr, "make_model_dir: %s\n", err.msg);
    return 2;
  }
  if (mkdir(argv[1], 0755) != 0) {
    perror(argv[1]);
    return 1;
  }
  if (tu_write_model_dir_cfg(argv[1], &cfg, seed, 0, &err) != 0) {
    fprintf(stderr, "make_model_dir: %s\n", err.msg);
    return 1;
  }
  return 0;
}
