# quality_convert_inception: deploy/fid/convert_inception.py on synthetic
# TorchScript archives (good ones: names, shapes, values, metadata,
# byte-identical reruns; hostile ones: refused, no output), and the digest in
# quality/include/gf/inception_file.h against deploy/fid/inception.sha256.
# Standard library only: no torch, no network, no installed weights.
# Included from tests/quality/CMakeLists.txt; the guard makes a second
# include harmless.
include_guard(GLOBAL)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME quality_convert_inception
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_convert_inception.py)
set_tests_properties(quality_convert_inception PROPERTIES LABELS unit TIMEOUT 120)
