# Fuzz targets of gf_model's parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): safetensors (buffer parse) with the checkpoint
# metadata reader, MLmodel (YAML),
# model config JSON, the restricted unpickler with the StyleGAN2-ADA
# snapshot reader, the StyleGAN2 training state. Seed corpora in corpus/<name>/.
gf_add_fuzz_target(safetensors ${CMAKE_CURRENT_LIST_DIR}/fuzz_safetensors.c gf_model)
gf_add_fuzz_target(mlmodel ${CMAKE_CURRENT_LIST_DIR}/fuzz_mlmodel.c gf_model)
gf_add_fuzz_target(model_config ${CMAKE_CURRENT_LIST_DIR}/fuzz_model_config.c gf_model)
gf_add_fuzz_target(model_pickle ${CMAKE_CURRENT_LIST_DIR}/fuzz_model_pickle.c gf_model)
gf_add_fuzz_target(sg2_state ${CMAKE_CURRENT_LIST_DIR}/fuzz_sg2_state.c gf_model)
