# Build options, compiler flags and optional-component detection.
# Heavy optional parts (CUDA, cuDNN, MPI, NCCL) default to AUTO: on when
# found, off otherwise, and the result is reported at configure time with
# what each enables.

include(CheckLanguage)

set(GF_CUDA  AUTO CACHE STRING "Build the CUDA backend (AUTO, ON, OFF)")
set(GF_CUDNN AUTO CACHE STRING "Use cuDNN in the CUDA backend (AUTO, ON, OFF)")
set(GF_MPI   AUTO CACHE STRING "Build the mpi collective backend (AUTO, ON, OFF)")
set(GF_NCCL  AUTO CACHE STRING
    "Build the nccl collective backend; needs the CUDA backend (AUTO, ON, OFF)")
foreach(opt GF_CUDA GF_CUDNN GF_MPI GF_NCCL)
  set_property(CACHE ${opt} PROPERTY STRINGS AUTO ON OFF)
endforeach()
option(GF_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(GF_FUZZ "Build libFuzzer targets (needs clang)" OFF)
option(GF_BUILD_TESTS "Build the tests" ON)
option(GF_WERROR "Treat warnings as errors" ON)

# ---- compiler flags --------------------------------------------------------
# C flags only: CUDA sources get theirs from the CUDA backend's CMakeLists.
set(GF_C_WARNINGS -Wall -Wextra -Wformat=2 -Wshadow -Wpointer-arith
                  -Wstrict-prototypes -Wmissing-prototypes)
if(GF_WERROR)
  list(APPEND GF_C_WARNINGS -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C>:${GF_C_WARNINGS}>")
add_compile_definitions(_POSIX_C_SOURCE=200809L _DEFAULT_SOURCE)
if(GF_SANITIZE)
  set(GF_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                   -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C>:${GF_SAN_FLAGS}>")
  add_link_options(${GF_SAN_FLAGS})
  # clang cannot vectorize an instrumented loop and reports every failed
  # `omp simd` request as a warning; vector code is not what a sanitizer
  # build checks.
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_compile_options("$<$<COMPILE_LANGUAGE:C>:-Wno-pass-failed>")
  endif()
endif()
# State checkers (gf/invariant.h): whole-object invariant checks of the
# state machines, run at each transition. On in Debug (asserts on) and in
# the sanitizer build (RelWithDebInfo, where NDEBUG turns assert off);
# never in the builds users run.
if(GF_SANITIZE)
  add_compile_definitions(GF_STATE_CHECKS=1)
else()
  add_compile_definitions($<$<CONFIG:Debug>:GF_STATE_CHECKS=1>)
endif()
if(GF_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "GF_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
endif()
if(GF_FUZZ)
  # Coverage for libFuzzer in every library, not only in the harnesses:
  # without it the code under test is invisible to the fuzzer.
  add_compile_options("$<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link>")
endif()

# ---- required libraries ----------------------------------------------------
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(CURL REQUIRED)
find_package(cJSON CONFIG QUIET)
if(NOT TARGET cjson)
  pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
  add_library(cjson ALIAS PkgConfig::CJSON)
endif()

# ---- optional heavy parts --------------------------------------------------
function(gf_resolve opt found)
  if(${opt} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "${opt}=ON but it was not found")
  endif()
  if(${opt} STREQUAL "OFF")
    set(${opt}_ENABLED OFF PARENT_SCOPE)
  else()
    set(${opt}_ENABLED ${${found}} PARENT_SCOPE)
  endif()
endfunction()

set(_gf_cuda_found OFF)
if(NOT GF_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_gf_cuda_found ON)
  endif()
endif()
gf_resolve(GF_CUDA _gf_cuda_found)
if(GF_CUDA_ENABLED)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # CMake 3.25.0/3.25.1 (Debian 12's) FindCUDAToolkit marks CUDA::nvToolsExt
  # deprecated without checking that the target exists, and the library is
  # gone from CUDA 12.9 on: configuring fails ("set_property could not find
  # TARGET CUDA::nvToolsExt"). An empty target of that name, which nothing
  # here links, lets the module finish; 3.25.2 checks.
  if(CMAKE_VERSION VERSION_LESS 3.25.2 AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  endif()
  find_package(CUDAToolkit REQUIRED)
endif()

set(_gf_cudnn_found OFF)
if(GF_CUDA_ENABLED AND NOT GF_CUDNN STREQUAL "OFF")
  find_library(GF_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR}
               ${CUDAToolkit_LIBRARY_ROOT} PATH_SUFFIXES lib64 lib)
  find_path(GF_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(GF_CUDNN_LIBRARY AND GF_CUDNN_INCLUDE)
    set(_gf_cudnn_found ON)
  endif()
endif()
gf_resolve(GF_CUDNN _gf_cudnn_found)

# MPI (C bindings only): gf_comm's mpi backend and the NCCL id broadcast
# under mpirun/srun. Only a process that asks for it initializes MPI.
set(_gf_mpi_found OFF)
if(NOT GF_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(_gf_mpi_found ON)
  endif()
endif()
gf_resolve(GF_MPI _gf_mpi_found)

# NCCL from the CUDA toolkit's prefix (nccl.h, libnccl); it needs the CUDA
# backend (CUDA and cuDNN), since its buffers live on a gf_ctx's device.
set(_gf_nccl_found OFF)
if(GF_CUDA_ENABLED AND GF_CUDNN_ENABLED AND NOT GF_NCCL STREQUAL "OFF")
  find_library(GF_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR}
               ${CUDAToolkit_LIBRARY_ROOT} PATH_SUFFIXES lib64 lib)
  find_path(GF_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(GF_NCCL_LIBRARY AND GF_NCCL_INCLUDE)
    set(_gf_nccl_found ON)
  endif()
endif()
gf_resolve(GF_NCCL _gf_nccl_found)

function(gf_report_configuration)
  message(STATUS "ganflow ${PROJECT_VERSION} configuration:")
  message(STATUS "  build type     ${CMAKE_BUILD_TYPE}")
  message(STATUS "  sanitizers     ${GF_SANITIZE}")
  message(STATUS "  fuzz targets   ${GF_FUZZ}")
  if(GF_CUDA_ENABLED AND GF_CUDNN_ENABLED)
    set(_what "the CUDA backend: --device cuda in ganflow-train and ganflow-serve")
  elseif(GF_CUDA_ENABLED)
    set(_what "nothing: the CUDA backend needs cuDNN too; --device cpu only")
  else()
    set(_what "--device cpu only")
  endif()
  message(STATUS "  CUDA           ${GF_CUDA_ENABLED} (${GF_CUDA}): ${_what}")
  message(STATUS "  cuDNN          ${GF_CUDNN_ENABLED} (${GF_CUDNN})")
  if(GF_MPI_ENABLED)
    set(_what "gf_comm backend mpi (host buffers), NCCL id over MPI")
  else()
    set(_what "no mpi comm backend")
  endif()
  message(STATUS "  MPI            ${GF_MPI_ENABLED} (${GF_MPI}): ${_what}")
  if(GF_NCCL_ENABLED)
    set(_what "gf_comm backend nccl (device buffers on the CUDA backend)")
  elseif(GF_NCCL STREQUAL "OFF")
    set(_what "no nccl comm backend")
  else()
    set(_what "no nccl comm backend (needs the CUDA backend and NCCL)")
  endif()
  message(STATUS "  NCCL           ${GF_NCCL_ENABLED} (${GF_NCCL}): ${_what}")
endfunction()
