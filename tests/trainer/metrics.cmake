# Unit tests of gf_metrics (trainer/metrics.cmake): SWD and the resource
# monitor. Included from tests/trainer/CMakeLists.txt.
#   test_swd      shapes and errors, exact zero, determinism across thread
#                 counts, monotone growth, a double-precision reference, and
#                 Fashion-MNIST (/usr/share/datasets/fashion-mnist; fails
#                 without it)
#   test_monitor  names, CPU/memory figures, sampling cadence, prompt stop,
#                 no NVML, a fake NVML (test_monitor.c built a second time
#                 as a loadable module with GF_TEST_FAKE_NVML), the step
#                 split, resumed step numbering
find_package(ZLIB REQUIRED)

add_executable(test_swd ${CMAKE_CURRENT_LIST_DIR}/test_swd.c)
target_link_libraries(test_swd PRIVATE gf_metrics ZLIB::ZLIB)
target_include_directories(test_swd PRIVATE ${GF_TEST_SUPPORT_DIR})
add_test(NAME trainer_swd COMMAND test_swd)
set_tests_properties(trainer_swd PROPERTIES LABELS unit TIMEOUT 120)
