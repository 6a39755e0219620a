# Tests of the networks (gf/net.h) and the GAN step (gf/gan.h), included
# from tests/model/CMakeLists.txt. The golden tests read the data files that
# golden/make_golden.py wrote with PyTorch; they do not need Python.
foreach(t nets gan_step)
  add_executable(test_${t} ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
  target_link_libraries(test_${t} PRIVATE gf_model)
  target_include_directories(test_${t} PRIVATE ${GF_TEST_SUPPORT_DIR})
  add_test(NAME model_${t} COMMAND test_${t})
  set_tests_properties(model_${t} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()
