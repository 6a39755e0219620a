# gf_monitor: the trainer's resource monitor, built on its own so that the
# training loop and the tests link it directly (DESIGN §4.7):
#   monitor*.c     /proc sampling, NVML through dlopen, the step-time
#                  split, MLflow system-metric names (gf/monitor.h)
#   sampler_thread.c  the periodic sampler thread of the monitor and of
#                  the energy meter (gf_trainer's energy.c)
# Included from trainer/CMakeLists.txt; needs gf_base (gf_status, gf_fits).
# No NVML header or library at build time: libnvidia-ml.so.1 is opened at
# run time.
add_library(gf_monitor STATIC
  ${CMAKE_CURRENT_LIST_DIR}/src/monitor.c
  ${CMAKE_CURRENT_LIST_DIR}/src/monitor_proc.c
  ${CMAKE_CURRENT_LIST_DIR}/src/monitor_nvml.c
  ${CMAKE_CURRENT_LIST_DIR}/src/sampler_thread.c
)
target_include_directories(gf_monitor PUBLIC ${CMAKE_CURRENT_LIST_DIR}/include)
target_link_libraries(gf_monitor
  PUBLIC gf_base Threads::Threads m ${CMAKE_DL_LIBS})
