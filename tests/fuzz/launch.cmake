# Fuzz targets of `ganflow launch`'s parsers of outside input (included by
# tests/fuzz/CMakeLists.txt): the rendezvous lines of `ganflow launch
# --nnodes`. Seed corpus in corpus/launch_rdzv/.
gf_add_fuzz_target(launch_rdzv ${CMAKE_CURRENT_LIST_DIR}/fuzz_launch_rdzv.c gf_launch)
target_include_directories(fuzz_launch_rdzv PRIVATE ${PROJECT_SOURCE_DIR}/launch/src)
# The capacity sources of `ganflow launch --elastic-capacity` (a capacity
# file, an Open MPI host file). Seed corpus in corpus/launch_capacity/.
gf_add_fuzz_target(launch_capacity ${CMAKE_CURRENT_LIST_DIR}/fuzz_launch_capacity.c gf_launch)

# scontrol's answers as `--elastic-capacity slurm` reads them
# (gf_capacity_from_slurm). Seed corpus in corpus/launch_slurm/.
gf_add_fuzz_target(launch_slurm ${CMAKE_CURRENT_LIST_DIR}/fuzz_launch_slurm.c gf_launch)
