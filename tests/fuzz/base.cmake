# Fuzz targets of gf_base's parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): the address rule of gf/sock.h (HOST:PORT and
# a host alone), seed corpus in corpus/base_sock_split/; the one number
# reader (gf/parse.h), its three functions cross-checked on the same bytes,
# seed corpus in corpus/base_parse/.
gf_add_fuzz_target(base_sock_split
  ${CMAKE_CURRENT_LIST_DIR}/fuzz_base_sock_split.c gf_base)
gf_add_fuzz_target(base_parse ${CMAKE_CURRENT_LIST_DIR}/fuzz_base_parse.c gf_base)
