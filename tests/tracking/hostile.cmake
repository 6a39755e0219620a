# hostile.cmake - the tracking library against a scripted hostile HTTP
# server (hostile_server.c) running on a thread of the test: error answers
# the real MLflow server cannot produce. Included by tests/tracking/
# CMakeLists.txt; needs nothing outside the process (label unit).
add_executable(tracking_hostile
  ${CMAKE_CURRENT_LIST_DIR}/test_hostile.c
  ${CMAKE_CURRENT_LIST_DIR}/hostile_server.c)
target_link_libraries(tracking_hostile PRIVATE mlflow_client Threads::Threads m)
target_include_directories(tracking_hostile PRIVATE ${GF_TEST_SUPPORT_DIR}
                           ${PROJECT_SOURCE_DIR}/tracking/src)
target_compile_definitions(tracking_hostile PRIVATE
  GF_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/tmp-tracking_hostile")
add_test(NAME tracking_hostile COMMAND tracking_hostile)
set_tests_properties(tracking_hostile PROPERTIES LABELS unit TIMEOUT 120)
