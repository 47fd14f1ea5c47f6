# Every third-party dependency comes from a Debian package (see scripts in the root); nothing is
# downloaded at build time.
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(spdlog CONFIG REQUIRED)
# spdlog and fmt compiled into each binary, never loaded as libspdlog.so and libfmt.so: with
# libstdc++ linked statically into the executables (ddprun_fast_start), ddprun then loads no C++
# shared library at all. Those libraries' own symbol bindings (some 2,700 of 3,200) were the
# largest part of its start-up. spdlog's definitions are compiled once, in
# base/src/spdlog_definitions.cc (SPDLOG_COMPILED_LIB: its headers only declare); fmt stays
# header-only.
get_target_property(_ddprun_spdlog_includes spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
add_library(ddprun_spdlog STATIC ${PROJECT_SOURCE_DIR}/base/src/spdlog_definitions.cc)
target_include_directories(ddprun_spdlog SYSTEM PUBLIC ${_ddprun_spdlog_includes})
target_compile_definitions(ddprun_spdlog PUBLIC SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL
  FMT_HEADER_ONLY=1)
target_link_libraries(ddprun_spdlog PUBLIC Threads::Threads PRIVATE ddprun_compile_options)
set_target_properties(ddprun_spdlog PROPERTIES POSITION_INDEPENDENT_CODE ON)
# A static program links static archives only (DDPRUN_STATIC_DAEMONS, cmake/CompilerOptions.cmake).
if(DDPRUN_STATIC_DAEMONS)
  set(ZLIB_USE_STATIC_LIBS ON)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
endif()
find_package(ZLIB REQUIRED)  # the checkpoints' CRC-32
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
if(BUILD_TESTING OR NOT DEFINED BUILD_TESTING)
  find_package(Catch2 2 CONFIG REQUIRED)
endif()

# ddprun_grpc: gRPC and Protobuf for every target that needs them. Linked statically by default
# (Debian ships the archives): `ddprun` then starts in a few milliseconds instead of spending
# ~40 ms resolving some sixty shared libraries, and maps only the gRPC code it runs. A target
# with the property DDPRUN_SHARED_GRPC (the installed shared runtime library, whose users link
# their own gRPC-free code against it) links the shared libraries instead: the archives are not
# built to go into a shared object.
add_library(ddprun_grpc INTERFACE)
set(_ddprun_shared_grpc "$<BOOL:$<TARGET_PROPERTY:DDPRUN_SHARED_GRPC>>")
if(DDPRUN_STATIC_GRPC)
  # pkg-config asked once, directly: pkg_check_modules asks it some twenty times, and each
  # answer walks Abseil's hundred .pc files (11 s of every configure, against 0.6 s).
  find_package(PkgConfig REQUIRED)
  execute_process(COMMAND "${PKG_CONFIG_EXECUTABLE}" --static --libs-only-l grpc++ protobuf
    OUTPUT_VARIABLE _ddprun_grpc_libs ERROR_VARIABLE _ddprun_grpc_error
    RESULT_VARIABLE _ddprun_grpc_found OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _ddprun_grpc_found EQUAL 0)
    message(FATAL_ERROR "pkg-config finds no static gRPC and Protobuf (${_ddprun_grpc_error}): "
                        "install libgrpc++-dev and libprotobuf-dev, or pass "
                        "-DDDPRUN_STATIC_GRPC=OFF")
  endif()
  separate_arguments(_ddprun_grpc_libs UNIX_COMMAND "${_ddprun_grpc_libs}")
  set(_ddprun_system_libs -ldl -lpthread -lrt -latomic -lm)
  set(_ddprun_static_libs)
  foreach(lib IN LISTS _ddprun_grpc_libs)
    if(NOT lib IN_LIST _ddprun_system_libs AND NOT lib IN_LIST _ddprun_static_libs)
      list(APPEND _ddprun_static_libs "${lib}")
    endif()
  endforeach()
  set(_ddprun_static_link)
  foreach(item IN ITEMS "-Wl,--push-state,-Bstatic" "-Wl,--start-group" ${_ddprun_static_libs}
                        "-Wl,--end-group" "-Wl,--pop-state")
    list(APPEND _ddprun_static_link "$<$<NOT:${_ddprun_shared_grpc}>:${item}>")
  endforeach()
  target_link_libraries(ddprun_grpc INTERFACE
    ${_ddprun_static_link}
    "$<${_ddprun_shared_grpc}:gRPC::grpc++>" "$<${_ddprun_shared_grpc}:protobuf::libprotobuf>"
    Threads::Threads dl rt atomic)
else()
  # OpenSSL named too: the operators' HTTPS endpoint calls it directly (monitoring/).
  find_package(OpenSSL REQUIRED)
  target_link_libraries(ddprun_grpc INTERFACE gRPC::grpc++ protobuf::libprotobuf OpenSSL::SSL)
endif()

# The CBLAS library of the runtime's CPU matrix products: OpenBLAS (Debian's libopenblas-dev), or
# the one DDPRUN_BLAS_LIBRARY names. The GPU bundle (bench/gpu_bundle.sh) links Debian's
# reference BLAS statically: 1 MiB, where OpenBLAS's kernels for every x86 CPU are 25 to 36.
set(DDPRUN_BLAS_LIBRARY "" CACHE FILEPATH "A CBLAS library to link instead of OpenBLAS")
if(DDPRUN_BLAS_LIBRARY)
  set(_ddprun_blas_library "${DDPRUN_BLAS_LIBRARY}")
else()
  find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
  set(_ddprun_blas_library "${OPENBLAS_LIBRARY}")
endif()
find_path(CBLAS_INCLUDE_DIR NAMES cblas.h PATH_SUFFIXES x86_64-linux-gnu openblas REQUIRED)
add_library(ddprun::blas UNKNOWN IMPORTED)
set_target_properties(ddprun::blas PROPERTIES
  IMPORTED_LOCATION "${_ddprun_blas_library}"
  INTERFACE_INCLUDE_DIRECTORIES "${CBLAS_INCLUDE_DIR}")
