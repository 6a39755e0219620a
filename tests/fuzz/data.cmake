# Fuzz targets of gf_data's parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): the IDX reader, CIFAR-10 records, PNG and
# JPEG decoding, class-name files (classes.txt, batches.meta.txt), all on
# memory buffers. Seed corpora in corpus/data_<name>/, written by
# tests/data/make_data_corpus.c.
# Their shared checks are in tests/data/fuzz_data_common.h.
foreach(name idx cifar png jpeg classes)
  gf_add_fuzz_target(data_${name} ${CMAKE_CURRENT_LIST_DIR}/fuzz_data_${name}.c gf_data)
  target_include_directories(fuzz_data_${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../data)
endforeach()
