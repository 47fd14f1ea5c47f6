# Warnings, sanitizers and ccache for every target of the project.
#   DDPRUN_SANITIZER: "" (none), "address", "undefined", "thread" or "address,undefined".
#   DDPRUN_WERROR:    turn warnings into errors (CI keeps the build warning-clean).
#   DDPRUN_FUZZ:      build the libFuzzer targets of tests/fuzz (clang only): every C and C++
#                     file gets the fuzzer's coverage instrumentation.
#   DDPRUN_FULL_DEBUG_INFO: -g as CMake gives it; off, C and C++ get -g1 instead (see below).

set(DDPRUN_SANITIZER "" CACHE STRING "Sanitizer to build with: address, undefined, thread or empty")
set_property(CACHE DDPRUN_SANITIZER PROPERTY STRINGS "" address undefined thread "address,undefined")
option(DDPRUN_WERROR "Treat compiler warnings as errors" OFF)
option(DDPRUN_FUZZ "Build the libFuzzer targets (tests/fuzz); needs clang" OFF)

# Debug information: line tables and functions (-g1; clang's -gline-tables-only) unless asked for
# all of it. That is what backtraces, ddprun's stacks of hung workers, gdb's `bt` and the
# sanitizers' reports read; a debugger's view of locals and types needs -g. The rest of -g was
# a quarter of each file's compile time at -O2 (the launcher's supervisor: 16.4 s, 11.8 s with
# -g1) and 65 s of a 7.5-minute fresh build of the demo (bench/RESULTS.md).
option(DDPRUN_FULL_DEBUG_INFO "Full debug information (-g) instead of line tables (-g1)" OFF)
if(NOT DDPRUN_FULL_DEBUG_INFO)
  foreach(lang C CXX)
    foreach(config DEBUG RELWITHDEBINFO)
      string(REGEX REPLACE "(^| )-g($| )" "\\1-g1\\2" CMAKE_${lang}_FLAGS_${config}
             "${CMAKE_${lang}_FLAGS_${config}}")
    endforeach()
  endforeach()
endif()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
  set(CMAKE_C_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()

add_library(ddprun_compile_options INTERFACE)
target_compile_options(ddprun_compile_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
# GCC 12 reports false -Wrestrict positives inside std::string concatenation at -O2 (GCC bug
# 105329); the warning is kept on every other compiler.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ddprun_compile_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
# Clang checks the locks: GUARDED_BY, REQUIRES and friends (ddprun/base/thread_annotations.h).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_compile_options(ddprun_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety -Wthread-safety-beta>)
endif()
if(DDPRUN_WERROR)
  target_compile_options(ddprun_compile_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()

if(DDPRUN_SANITIZER)
  if(NOT DDPRUN_SANITIZER MATCHES "^(address|undefined|thread|address,undefined)$")
    message(FATAL_ERROR "DDPRUN_SANITIZER must be address, undefined, thread or "
                        "address,undefined, not '${DDPRUN_SANITIZER}'")
  endif()
  set(_ddprun_sanitize_flags -fsanitize=${DDPRUN_SANITIZER} -fno-omit-frame-pointer)
  if(DDPRUN_SANITIZER MATCHES "undefined")
    list(APPEND _ddprun_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  # GCC warns that ThreadSanitizer does not model std::atomic_thread_fence, which Boost.Asio's
  # headers use; the fences there order nothing our tests depend on.
  if(DDPRUN_SANITIZER STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND _ddprun_sanitize_flags -Wno-tsan)
  endif()
  # C and C++ only: nvcc takes no sanitizer flags, and the CUDA kernels' host stubs it compiles
  # stay uninstrumented, as the CUDA libraries are.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_ddprun_sanitize_flags}>")
  add_link_options(-fsanitize=${DDPRUN_SANITIZER})
endif()

if(DDPRUN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DDPRUN_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # -O1: libFuzzer's advice, fast enough to run and to build. The fuzz targets themselves link
  # with -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt), which brings libFuzzer's main.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link;-O1>")
endif()

# lld, where installed, links every program: a test binary that links gRPC statically takes 1-2 s
# instead of GNU ld's 3-6 s, and `./run.sh test` links some fifty of them in three builds. C and
# C++ link lines only (nvcc takes no such flag).
option(DDPRUN_USE_LLD "Link with lld when the compiler can" ON)
if(DDPRUN_USE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld DDPRUN_HAVE_LLD)
  if(DDPRUN_HAVE_LLD)
    add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fuse-ld=lld>")
  endif()
endif()

# gRPC, Protobuf and Abseil linked statically (cmake/Dependencies.cmake), or as Debian's shared
# libraries; declared here because ddprun_fast_start below depends on it.
option(DDPRUN_STATIC_GRPC "Link gRPC, Protobuf and Abseil statically" ON)

# ddprun_fast_start: for the executables whose start-up is a headline figure (ddprun, ddprund).
# libstdc++ and libgcc linked in, so that the dynamic loader binds only libc's symbols. Not under a
# sanitizer, whose runtime must see the C++ allocator of a shared libstdc++; nor with gRPC's shared
# libraries, which load libstdc++.so: one process would hold two copies of the C++ library.
add_library(ddprun_fast_start INTERFACE)
if(NOT DDPRUN_SANITIZER AND NOT DDPRUN_FUZZ AND DDPRUN_STATIC_GRPC
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_link_options(ddprun_fast_start INTERFACE -static-libstdc++ -static-libgcc)
  # GNU ld lays them out: the same objects linked by lld 14 take 260 page faults to print
  # `ddprun --version` instead of 185, 7.6-9.1 ms instead of 5.9-6.1 (perf stat -r 40).
  if(DDPRUN_HAVE_LLD)
    target_link_options(ddprun_fast_start INTERFACE -fuse-ld=bfd)
  endif()
endif()

# ddprun_fixed_address: the launchers (`ddprun` and the network launcher) are linked at a fixed
# address (not position-independent), as Go links its network daemons (etcd, Prometheus). A
# position-independent launcher with gRPC, Protobuf, Abseil and OpenSSL linked in has 43,000
# relative relocations that are written at every start: half of the page faults of `ddprun
# --version` when `ddprun` was that launcher, 3.4 of its 9.7 ms where a page fault is dear
# (bench/RESULTS.md, 2026-12-05). The heap and the stack stay randomized; only the executable's
# own image does not move. ddprund, which serves the network for as long as it runs and starts
# once, stays position-independent; -DDDPRUN_LAUNCHER_PIE=ON makes the launchers so too.
option(DDPRUN_LAUNCHER_PIE "Link ddprun position-independent (slower start, randomized image)" OFF)
add_library(ddprun_fixed_address INTERFACE)
if(NOT DDPRUN_LAUNCHER_PIE AND NOT DDPRUN_SANITIZER AND NOT DDPRUN_FUZZ)
  target_link_options(ddprun_fixed_address INTERFACE -no-pie)
endif()

# ddprun_static_program: `ddprun` is linked statically, glibc too: no dynamic loader runs at its
# start (it mapped libc and libm and bound their symbols: 0.4 ms of a 3.5 ms launch of 4 workers,
# bench/RESULTS.md, 2026-12-06). Safe because `ddprun` calls no function of glibc's that loads
# shared libraries at run time (name resolution, users and groups, iconv): what needs them is
# the network launcher's, and tests/tools/lean_launcher_check.sh checks its symbols. Not under a
# sanitizer, whose runtime is a shared library, nor with DDPRUN_LAUNCHER_PIE; nor with gRPC's
# shared libraries, which are on its link line (unused) and cannot be linked statically.
option(DDPRUN_STATIC_LAUNCHER "Link ddprun statically (glibc included)" ON)
add_library(ddprun_static_program INTERFACE)
if(DDPRUN_STATIC_LAUNCHER AND NOT DDPRUN_LAUNCHER_PIE AND NOT DDPRUN_SANITIZER AND NOT DDPRUN_FUZZ
   AND DDPRUN_STATIC_GRPC AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_link_options(ddprun_static_program INTERFACE -static)
endif()

# ddprun_static_daemon: the network launcher and ddprund linked statically too, glibc included,
# where DDPRUN_STATIC_DAEMONS asks (the wheel's build, pyproject.toml): a wheel must run on
# distributions older than the one it was built on, and a program linked to glibc 2.36 does not
# start on 2.31. They resolve host names (getaddrinfo), which a static glibc does for the
# nsswitch.conf sources `files` and `dns`, compiled into it since 2.34; a source loaded as a
# module (mdns, sss, myhostname) is skipped.
option(DDPRUN_STATIC_DAEMONS "Link the network launcher and ddprund statically (glibc included)" OFF)
add_library(ddprun_static_daemon INTERFACE)
if(DDPRUN_STATIC_DAEMONS)
  if(DDPRUN_SANITIZER OR DDPRUN_FUZZ OR NOT DDPRUN_STATIC_GRPC OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(FATAL_ERROR "DDPRUN_STATIC_DAEMONS needs GCC, DDPRUN_STATIC_GRPC and no sanitizer")
  endif()
  target_link_options(ddprun_static_daemon INTERFACE -static)
endif()
