# Unit tests of gf_monitor (trainer/monitor.cmake): the resource monitor.
# Included from tests/trainer/CMakeLists.txt.
#   test_monitor  names, CPU/memory figures, sampling cadence, prompt stop,
#                 no NVML, a fake NVML (test_monitor.c built a second time
#                 as a loadable module with GF_TEST_FAKE_NVML), the step
#                 split, resumed step numbering
add_library(gf_fake_nvml MODULE ${CMAKE_CURRENT_LIST_DIR}/test_monitor.c)
target_compile_definitions(gf_fake_nvml PRIVATE GF_TEST_FAKE_NVML)
target_include_directories(gf_fake_nvml PRIVATE ${GF_TEST_SUPPORT_DIR})
set_target_properties(gf_fake_nvml PROPERTIES PREFIX "" OUTPUT_NAME fake_nvml)

add_executable(test_monitor ${CMAKE_CURRENT_LIST_DIR}/test_monitor.c)
target_link_libraries(test_monitor PRIVATE gf_monitor)
target_include_directories(test_monitor PRIVATE ${GF_TEST_SUPPORT_DIR})
target_compile_definitions(test_monitor PRIVATE
  GF_FAKE_NVML_PATH="$<TARGET_FILE:gf_fake_nvml>")
add_dependencies(test_monitor gf_fake_nvml)
add_test(NAME trainer_monitor COMMAND test_monitor)
set_tests_properties(trainer_monitor PROPERTIES LABELS unit TIMEOUT 120)

# The monitor's names against MLflow's own: monitor_names prints every name
# it emits (2 ranks, 2 fake GPUs), test_mlflow_system_names.py compares them
# with what the installed MLflow package's CPU and GPU monitors write.
add_executable(monitor_names ${CMAKE_CURRENT_LIST_DIR}/monitor_names.c)
target_link_libraries(monitor_names PRIVATE gf_monitor)
target_compile_definitions(monitor_names PRIVATE
  GF_FAKE_NVML_PATH="$<TARGET_FILE:gf_fake_nvml>")
add_dependencies(monitor_names gf_fake_nvml)
add_test(NAME trainer_monitor_mlflow_names
  COMMAND sh -c "'$<TARGET_FILE:monitor_names>' | '${PROJECT_SOURCE_DIR}/.venv/bin/python' '${CMAKE_CURRENT_LIST_DIR}/test_mlflow_system_names.py'")
set_tests_properties(trainer_monitor_mlflow_names PROPERTIES LABELS unit
  TIMEOUT 120)
