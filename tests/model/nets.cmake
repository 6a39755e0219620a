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

# One GAN step of mlp, dcgan-28 and dcgan-64, of three recipes (hinge +
# spectral norm + EMA with 2 D steps per G step on dcgan-28, WGAN + spectral
# norm on mlp, a ramped EMA on dcgan-28) and of four with R1 and DiffAugment
# (hinge + spectral norm + R1 + every policy on dcgan-28, R1 every step,
# lazily applied and lazily skipped; BCE + R1 + translation and cutout on
# mlp), against PyTorch's numbers;
# model_golden_fires perturbs one latent by 1e-3 and passes only when the
# comparison then fails in each of the ten cases.
add_executable(test_golden ${CMAKE_CURRENT_LIST_DIR}/test_golden.c
               ${CMAKE_CURRENT_LIST_DIR}/golden_util.c)
target_link_libraries(test_golden PRIVATE gf_model)
target_include_directories(test_golden PRIVATE ${GF_TEST_SUPPORT_DIR})
add_test(NAME model_golden COMMAND test_golden ${CMAKE_CURRENT_LIST_DIR}/golden)
add_test(NAME model_golden_fires COMMAND test_golden ${CMAKE_CURRENT_LIST_DIR}/golden --perturb-z)
set_tests_properties(model_golden model_golden_fires PROPERTIES LABELS unit TIMEOUT 120)

# gf_net_r1 (the R1 penalty by double backprop) against PyTorch's
# create_graph=True numbers in golden/r1_*.safetensors
# (golden/make_r1_golden.py), finite differences on tiny Ds, and its
# refusals; model_r1_fires runs the golden cases with the scale 0.01 % off
# and passes only when each case's comparison then fails.
add_executable(test_r1 ${CMAKE_CURRENT_LIST_DIR}/test_r1.c
               ${CMAKE_CURRENT_LIST_DIR}/golden_util.c)
target_link_libraries(test_r1 PRIVATE gf_model)
target_include_directories(test_r1 PRIVATE ${GF_TEST_SUPPORT_DIR}
                           ${PROJECT_SOURCE_DIR}/model/src)
add_test(NAME model_r1 COMMAND test_r1 ${CMAKE_CURRENT_LIST_DIR}/golden)
add_test(NAME model_r1_fires COMMAND test_r1 ${CMAKE_CURRENT_LIST_DIR}/golden --perturb)
set_tests_properties(model_r1 model_r1_fires PROPERTIES LABELS unit TIMEOUT 120)

# gf_net_r1 on CUDA against the CPU (label gpu: exits 77 without a GPU),
# with the GPU tests' helpers of tests/kernels (kt_cuda.c).
if(TARGET gf_kernels_cudatest)
  add_executable(test_cuda_r1 ${CMAKE_CURRENT_LIST_DIR}/test_cuda_r1.c)
  target_link_libraries(test_cuda_r1 PRIVATE gf_kernels_cudatest gf_model)
  target_include_directories(test_cuda_r1 PRIVATE ${GF_TEST_SUPPORT_DIR})
  add_test(NAME model_cuda_r1 COMMAND test_cuda_r1)
  set_tests_properties(model_cuda_r1 PROPERTIES LABELS gpu TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()

# The StyleGAN2 generator and discriminator forwards and backwards
# (gf/sg2_net.h) against the official code's numbers and autograd in
# golden/sg2_*.safetensors (golden/make_sg2_nets_golden.py): names both
# ways, shape refusals, each comparison shown to fire, 1 and 4 threads the
# same bits; the gpu test runs the same on CUDA against the CPU and the
# goldens (77 without a GPU).
add_executable(test_sg2_nets ${CMAKE_CURRENT_LIST_DIR}/test_sg2_nets.c
  ${CMAKE_CURRENT_LIST_DIR}/sg2_test_util.c)
target_link_libraries(test_sg2_nets PRIVATE gf_model)
target_include_directories(test_sg2_nets PRIVATE ${GF_TEST_SUPPORT_DIR})
add_test(NAME model_sg2_nets COMMAND test_sg2_nets
  ${CMAKE_CURRENT_LIST_DIR}/golden)
set_tests_properties(model_sg2_nets PROPERTIES LABELS unit TIMEOUT 120)
if(GF_CUDA_BACKEND)
  add_test(NAME model_sg2_nets_cuda COMMAND test_sg2_nets
    ${CMAKE_CURRENT_LIST_DIR}/golden cuda)
  set_tests_properties(model_sg2_nets_cuda PROPERTIES LABELS gpu TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()

# StyleGAN2's regularisers (R1: gf_sg2_d_r1) against the official double
# backward in golden/sg2_*_r1.safetensors (golden/make_sg2_reg_golden.py):
# penalties, every parameter gradient, finite differences, each comparison
# shown to fire; the gpu test runs R1 on CUDA (77 without a GPU).
add_executable(test_sg2_reg ${CMAKE_CURRENT_LIST_DIR}/test_sg2_reg.c
  ${CMAKE_CURRENT_LIST_DIR}/sg2_test_util.c)
target_link_libraries(test_sg2_reg PRIVATE gf_model)
target_include_directories(test_sg2_reg PRIVATE ${GF_TEST_SUPPORT_DIR})
add_test(NAME model_sg2_reg COMMAND test_sg2_reg
  ${CMAKE_CURRENT_LIST_DIR}/golden)
set_tests_properties(model_sg2_reg PROPERTIES LABELS unit TIMEOUT 120)
if(GF_CUDA_BACKEND)
  add_test(NAME model_sg2_reg_cuda COMMAND test_sg2_reg
    ${CMAKE_CURRENT_LIST_DIR}/golden cuda)
  set_tests_properties(model_sg2_reg_cuda PROPERTIES LABELS gpu TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()
