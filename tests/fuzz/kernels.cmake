# Fuzz targets of gf_kernels' parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): gf_launch_detect over a fuzzed environment
# (NAME=VALUE lines), seed corpus in corpus/launch_env/; the tcp engine's
# bootstrap messages and table (private parsers,
# src/comm/comm_tcp_wire.h), seed corpus in corpus/comm_tcp_hello/.
gf_add_fuzz_target(launch_env ${CMAKE_CURRENT_LIST_DIR}/fuzz_launch_env.c gf_kernels)
gf_add_fuzz_target(comm_tcp_hello
  ${CMAKE_CURRENT_LIST_DIR}/fuzz_comm_tcp_hello.c gf_kernels)
target_include_directories(fuzz_comm_tcp_hello PRIVATE
  ${PROJECT_SOURCE_DIR}/kernels/src)
