# gf_metrics: the trainer's measuring parts, built on their own so that the
# training loop and the tests link them directly (DESIGN §4.7, §4.8):
#   swd.c          sliced Wasserstein distance (gf/swd.h)
#   monitor*.c     resource monitor: /proc sampling, NVML through dlopen,
#                  the step-time split, MLflow system-metric names
#                  (gf/monitor.h)
#   sampler_thread.c  the periodic sampler thread of the monitor and of
#                  the energy meter (gf_trainer's energy.c)
# Included from trainer/CMakeLists.txt; needs gf_kernels (Philox) and
# gf_base (gf_status, gf_fits). No NVML header or library at build time: libnvidia-ml.so.1 is
# opened at run time.
add_library(gf_metrics STATIC
  ${CMAKE_CURRENT_LIST_DIR}/src/swd.c
  ${CMAKE_CURRENT_LIST_DIR}/src/monitor.c
  ${CMAKE_CURRENT_LIST_DIR}/src/monitor_proc.c
  ${CMAKE_CURRENT_LIST_DIR}/src/monitor_nvml.c
  ${CMAKE_CURRENT_LIST_DIR}/src/sampler_thread.c
)
target_include_directories(gf_metrics PUBLIC ${CMAKE_CURRENT_LIST_DIR}/include)
target_link_libraries(gf_metrics
  PUBLIC gf_model gf_kernels gf_base Threads::Threads m ${CMAKE_DL_LIBS})
# The projection loop is written to vectorize over descriptors without
# changing the order of any sum (so results do not depend on the vector
# width; the AVX2 clone of swd.c gives the same bits): -O3 as in
# gf_kernels, never -ffast-math, and no contraction into FMA.
target_compile_options(gf_metrics PRIVATE $<$<NOT:$<CONFIG:Debug>>:-O3>
  -ffp-contract=off)
