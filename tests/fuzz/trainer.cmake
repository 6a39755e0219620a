# Fuzz targets of gf_data's parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): the IDX reader, CIFAR-10 records, PNG and
# JPEG decoding, class-name files (classes.txt, batches.meta.txt), all on
# memory buffers. Seed corpora in corpus/data_<name>/, written by
# tests/trainer/make_data_corpus.c.
# Their shared checks are in tests/trainer/fuzz_data_common.h.
foreach(name idx cifar png jpeg classes)
  gf_add_fuzz_target(data_${name} ${CMAKE_CURRENT_LIST_DIR}/fuzz_data_${name}.c gf_data)
  target_include_directories(fuzz_data_${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../trainer)
endforeach()

# The heartbeat line a rank writes for `ganflow launch` (gf/heartbeat.h).
# Seed corpus in corpus/heartbeat/.
gf_add_fuzz_target(heartbeat ${CMAKE_CURRENT_LIST_DIR}/fuzz_heartbeat.c gf_trainer)

# The price file of a run's cost (gf/energy.h, gf_price_parse). Seed corpus
# in corpus/price_file/.
gf_add_fuzz_target(price_file ${CMAKE_CURRENT_LIST_DIR}/fuzz_price_file.c gf_trainer)

# The run's cost ledger, <checkpoint-dir>/cost.ledger (gf/cost.h,
# gf_cost_ledger_parse). Seed corpus in corpus/cost_ledger/.
gf_add_fuzz_target(cost_ledger ${CMAKE_CURRENT_LIST_DIR}/fuzz_cost_ledger.c gf_trainer)

# A run's --auto choice, <checkpoint-dir>/auto (train_auto_parse, private
# to gf_trainer: trainer/src/train_state.h). Seed corpus in
# corpus/train_auto/.
gf_add_fuzz_target(train_auto ${CMAKE_CURRENT_LIST_DIR}/fuzz_train_auto.c gf_trainer)
target_include_directories(fuzz_train_auto PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../trainer/src)
