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

# One GAN step of mlp, dcgan-28 and dcgan-64, and of three recipes (hinge +
# spectral norm + EMA with 2 D steps per G step on dcgan-28, WGAN + spectral
# norm on mlp, a ramped EMA on dcgan-28), against PyTorch's numbers;
# model_golden_fires perturbs one latent by 1e-3 and passes only when the
# comparison then fails in each of the six cases.
add_executable(test_golden ${CMAKE_CURRENT_LIST_DIR}/test_golden.c)
target_link_libraries(test_golden PRIVATE gf_model)
target_include_directories(test_golden PRIVATE ${GF_TEST_SUPPORT_DIR})
add_test(NAME model_golden COMMAND test_golden ${CMAKE_CURRENT_LIST_DIR}/golden)
add_test(NAME model_golden_fires COMMAND test_golden ${CMAKE_CURRENT_LIST_DIR}/golden --perturb-z)
set_tests_properties(model_golden model_golden_fires PROPERTIES LABELS unit TIMEOUT 120)
