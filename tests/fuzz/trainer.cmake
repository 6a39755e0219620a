# Fuzz targets of gf_trainer's parsers of outside input (included by
# tests/fuzz/CMakeLists.txt).
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
