# Decides whether the CUDA sources build. AUTO builds them when nvcc and NCCL are both found.
set(ZT_HAVE_CUDA OFF)
if(NOT ZT_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS /usr/local/cuda/lib64 /usr/local/cuda/lib ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(CMAKE_CUDA_COMPILER AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200 (sm_90); override with -DCMAKE_CUDA_ARCHITECTURES
    endif()
    # One CUDA runtime per process: the shared one CUDA::cudart links (CMake would otherwise add the
    # static one to every target with CUDA sources, beside it).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 has no C++20 dialect flag for nvcc 13; headers stay C++20-clean
    add_library(zt_nccl INTERFACE)
    target_include_directories(zt_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(zt_nccl INTERFACE ${NCCL_LIBRARY})
    set(ZT_HAVE_CUDA ON)
    # The emulated GPU's tests also build the kernels with FMA contraction, as nvcc compiles device
    # code, where this CPU has FMA instructions (tests/kernels_cuda).
    include(CheckCXXSourceRuns)
    check_cxx_source_runs("int main() { return __builtin_cpu_supports(\"fma\") ? 0 : 1; }" ZT_HOST_HAS_FMA)
    message(STATUS "zerotrain: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, NCCL ${NCCL_LIBRARY}, arch ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(ZT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ZT_CUDA=ON but nvcc (${CMAKE_CUDA_COMPILER}) or NCCL (${NCCL_INCLUDE_DIR}, ${NCCL_LIBRARY}) was not found")
  else()
    message(STATUS "zerotrain: CUDA backend OFF (nvcc or NCCL not found)")
  endif()
endif()
