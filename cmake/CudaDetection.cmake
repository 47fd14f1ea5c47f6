# Finds the CUDA toolkit and NCCL (by default under /usr/local/cuda). Sets DDPRUN_HAVE_CUDA and
# DDPRUN_HAVE_NCCL; without them the build still works and GPU code and tests are left out.
option(DDPRUN_WITH_CUDA "Build the GPU code when the CUDA toolkit is found" ON)
set(DDPRUN_HAVE_CUDA OFF)
set(DDPRUN_HAVE_NCCL OFF)

if(DDPRUN_WITH_CUDA)
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(DDPRUN_HAVE_CUDA ON)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include)
    if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
      set(DDPRUN_HAVE_NCCL ON)
      add_library(ddprun::nccl UNKNOWN IMPORTED)
      set_target_properties(ddprun::nccl PROPERTIES
        IMPORTED_LOCATION "${NCCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    endif()
  endif()
endif()
message(STATUS "ddprun: CUDA ${DDPRUN_HAVE_CUDA} (${CUDAToolkit_VERSION}), NCCL ${DDPRUN_HAVE_NCCL}")
