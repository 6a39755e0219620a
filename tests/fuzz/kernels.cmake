# Fuzz targets of gf_kernels' parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): gf_launch_detect over a fuzzed environment
# (NAME=VALUE lines). Seed corpus in corpus/launch_env/.
gf_add_fuzz_target(launch_env ${CMAKE_CURRENT_LIST_DIR}/fuzz_launch_env.c gf_kernels)
