#!/usr/bin/env bash
# The one entry point for building and running ddprun on a Debian 12 machine.
#
#   ./run.sh demo     install what is missing, build ddprun and the example trainer, train a
#                     model on 2 workers under ddprun
#   ./run.sh test     install what is missing, check the C and C++ sources' layout
#                     (clang-format), build, run the whole test suite (with the GPU bundle
#                     and the wheel, each built beside the build and checked; then a clang build with
#                     its lock analysis as errors, whose tests run under ThreadSanitizer, and
#                     one clang 16 build under AddressSanitizer + UBSan with libFuzzer's
#                     instrumentation: the suite again, then every fuzz target for 10 s), build
#                     the .deb, install it, run it and purge it
#                     (packaging/check_deb.sh), then the speed guard (bench/speed_guard.py:
#                     launch and restart against the machine's floor, at most 3x, for the
#                     build's ddprun and the wheel's); ends with
#                     each stage's time and one line: N passed, N failed, N skipped
#   ./run.sh fuzz [SECONDS]
#                     install what is missing, build the libFuzzer targets (tests/fuzz) and run
#                     each for SECONDS (default 300), two at a time; `test` runs them 10 s each
#   ./run.sh torch-venv
#                     install the pinned torch (tests/pytorch/torch_pin.txt) into the project's
#                     virtual environment when missing, and print its interpreter's path
#   ./run.sh format   lay out every C and C++ source as .clang-format says (clang-format 14)
#   ./run.sh deps     only install the Debian packages the build needs (idempotent)
#   ./run.sh build    deps + build into ./build
#
# Environment: BUILD_DIR (default build), DDPRUN_SKIP_SANITIZERS=1 skips the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential cmake ninja-build pkg-config ccache lld
          libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
          libboost-dev libspdlog-dev catch2 libopenblas-dev zlib1g-dev
          iproute2 openssl)
# clang 16 and its runtimes, with libFuzzer, for the fuzz targets.
FUZZ_PACKAGES=(clang-16 libclang-rt-16-dev)
# What only the tests need: real PyTorch, to run torchrun-style scripts under ddprun and to check
# the runtime against torch (Debian's 1.13, the oldest supported; the current release comes from
# PyPI into a virtual environment, torch_venv below, which python3-venv makes); taskset
# (util-linux) to bound --nproc_per_node=auto; systemd-analyze to verify the daemon's unit; file,
# dpkg-shlibdeps (dpkg-dev) and adduser to build and check the .deb; clang and its sanitizer
# runtimes for the lock analysis and ThreadSanitizer; gdb for the stacks a hang's report quotes;
# Slurm and MUNGE, whose daemons the Slurm tests start themselves (a one-host cluster of their
# own; the packages' services are not started); etcd, whose members the etcd tests start on
# loopback addresses of their own; Prometheus, for its promtool, which reads the daemon's
# /metrics page; Chromium, headless, to load its live page; Debian's reference BLAS, which the GPU
# bundle links instead of OpenBLAS (bench/gpu_bundle.sh); debootstrap, which makes the Debian 11
# root the wheel is tried in (tests/packaging/wheel_test.py).
TEST_PACKAGES=(python3-torch python3-tqdm python3-venv util-linux systemd file dpkg-dev adduser clang libclang-rt-14-dev
               gdb slurm-wlm munge etcd-server prometheus chromium clang-format-14 libblas-dev debootstrap
               "${FUZZ_PACKAGES[@]}")
BUILD_DIR=${BUILD_DIR:-build}
# ccache hits across clones in other folders (CI builds a fresh clone each time).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# deps [PACKAGE...]: installs those of PACKAGES and the given ones that are missing.
deps() {
  local missing=()
  for package in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  if [ ${#missing[@]} -eq 0 ]; then return; fi
  echo "run.sh: installing ${missing[*]}"
  as_root apt-get update -q
  # No package starts a service while installed (munge, slurmd...): the tests start what they
  # need. policy-rc.d is Debian's switch for that, removed again unless it was there before.
  local own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d > /dev/null
    as_root chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  local status=0
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" || status=$?
  if [ "$own_policy" -eq 1 ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
  return "$status"
}

# pinned_venv PINS NAME IMPORTS [VENV]: installs what the pip requirements file PINS pins into a
# virtual environment of the project's own (Debian's python3, never its site-packages), unless it
# is there already, and prints its interpreter. The environment is VENV, or is named by NAME and
# the pins, outside the clone (~/.cache/ddprun/NAME-<hash>), so every clone and run reuses it and
# raising a pin installs a new one; it counts as there only once `import IMPORTS` has worked (a marker
# file), so an install cut short is done again. A lock keeps two runs from installing into one
# at once.
pinned_venv() {
  local pins=$1 name=$2 imports=$3 venv=${4:-} key
  key=$(grep -v '^[[:space:]]*#' "$pins" | grep . | sha256sum | cut -c1-12)
  venv=${venv:-${XDG_CACHE_HOME:-$HOME/.cache}/ddprun/$name-$key}
  mkdir -p "$(dirname "$venv")"
  (
    flock 9
    [ -f "$venv/.ddprun-installed" ] && exit 0
    echo "run.sh: installing $(grep -v '^[[:space:]]*#' "$pins" | xargs) into $venv" >&2
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" &&
      "$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check -r "$pins" >&2 &&
      "$venv/bin/python" -c "import $imports" &&
      touch "$venv/.ddprun-installed"
  ) 9>"$venv.lock" || return 1
  echo "$venv/bin/python"
}

# torch_venv: the torch of tests/pytorch/torch_pin.txt, with its companions, exported as
# DDPRUN_TEST_TORCH_PYTHON, which `build` hands to the tests ($DDPRUN_TORCH_VENV names the
# environment to use instead); wheel_tools: scikit-build-core and auditwheel (tests/packaging/wheel_tools_pin.txt),
# which build and check the wheel, exported as DDPRUN_WHEEL_TOOLS_PYTHON.
torch_venv() {
  DDPRUN_TEST_TORCH_PYTHON=$(pinned_venv tests/pytorch/torch_pin.txt torch-venv \
    "torch, torch.distributed.run" "${DDPRUN_TORCH_VENV:-}") || return 1
  export DDPRUN_TEST_TORCH_PYTHON
}
wheel_tools() {
  DDPRUN_WHEEL_TOOLS_PYTHON=$(pinned_venv tests/packaging/wheel_tools_pin.txt wheel-tools \
    "scikit_build_core, auditwheel") || return 1
  export DDPRUN_WHEEL_TOOLS_PYTHON
}

# build DIR [extra cmake arguments...]: configures and builds everything, or only the targets
# named in TARGETS (a space-separated list). With DDPRUN_TEST_TORCH_PYTHON set (torch_venv), the
# PyTorch tests run under that interpreter; with DDPRUN_WHEEL_TOOLS_PYTHON (wheel_tools), the
# wheel's tests build it with that one.
build() {
  local dir=$1
  shift
  local targets=() interpreters=()
  [ -z "${TARGETS:-}" ] || read -r -a targets <<<"--target $TARGETS"
  [ -z "${DDPRUN_TEST_TORCH_PYTHON:-}" ] ||
    interpreters+=(-DDDPRUN_TEST_TORCH_PYTHON="$DDPRUN_TEST_TORCH_PYTHON")
  [ -z "${DDPRUN_WHEEL_TOOLS_PYTHON:-}" ] ||
    interpreters+=(-DDDPRUN_WHEEL_TOOLS_PYTHON="$DDPRUN_WHEEL_TOOLS_PYTHON")
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDPRUN_WERROR=ON \
    "${interpreters[@]}" "$@" >/dev/null &&
    cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
}

# What `test` reports when it ends, however it ends: the time of each stage, then one line
# counting every test of every stage (skipped: a test that cannot run here, with its reason
# printed by its stage).
STAGE_TIMES=()
PASSED=0 FAILED=0 SKIPPED=0
report() {
  echo "run.sh: stage times:"
  local line
  for line in "${STAGE_TIMES[@]}"; do echo "  $line"; done
  echo "tests: $PASSED passed, $FAILED failed, $SKIPPED skipped"
}

# stage NAME COMMAND...: runs the command as one stage of `test`, timed.
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "run.sh: $name"
  if ! "$@"; then
    STAGE_TIMES+=("$name: $((SECONDS - start)) s, failed")
    return 1
  fi
  STAGE_TIMES+=("$name: $((SECONDS - start)) s")
}

# run_tests DIR [ctest arguments...]: runs the tests of build DIR and adds them to the counts.
run_tests() {
  local dir=$1 status=0 counts
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 300 \
    --output-junit "$PWD/$dir/ctest-junit.xml" "$@" || status=$?
  [ -f "$dir/ctest-junit.xml" ] || return 1
  counts=$(tests/tools/junit_counts.py "$dir/ctest-junit.xml") || return 1
  sed '$d' <<<"$counts"
  read -r passed failed skipped <<<"$(tail -n 1 <<<"$counts")"
  PASSED=$((PASSED + passed)) FAILED=$((FAILED + failed)) SKIPPED=$((SKIPPED + skipped))
  return $status
}

# One clang build for two checks. Clang's thread-safety analysis of every annotated lock, as
# errors (-Wthread-safety with -Werror), over the binaries, the libraries and the tests. And
# ThreadSanitizer over the tests that run no gRPC or protobuf code (Debian builds those without
# TSan, and protobuf's classes change layout under it): the unit tests but those of
# unit_protobuf_tests, and the runtime's ranks as threads over real links. Unoptimized (Debug
# compiles faster); nvcc keeps GCC as its host compiler, and the kernels are not instrumented.
clang_tsan_build() {
  CC=clang CXX=clang++ TARGETS="ddprun ddprund unit_tests runtime_thread_tests" \
    build "$BUILD_DIR-clang-tsan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CUDA_HOST_COMPILER=g++ \
    -DDDPRUN_SANITIZER=thread
}
tsan_tests() {
  # OpenBLAS runs single-threaded: its own threads synchronize in ways TSan cannot see. The
  # exhaustive sweep of every collective, type and op at world sizes 1 to 8 is left out: it
  # takes longer than its limit under TSan, and the other collectives tests run the same ring
  # and links there.
  OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    run_tests "$BUILD_DIR-clang-tsan" --tests-regex "^(unit|integration):" \
    --exclude-regex "every collective, type and op"
}

# One clang 16 build for two checks: every test under AddressSanitizer and UBSan, and the fuzz
# targets of tests/fuzz, for which every library carries libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link, at -O1). The tests run on that instrumented code as well; one
# build instead of a GCC one for the tests and a clang one for the fuzzers, which compiled the
# same sources twice. TARGETS narrows it (the fuzz targets only, for `./run.sh fuzz`).
sanitizer_build() {
  CC=clang-16 CXX=clang++-16 build "$BUILD_DIR-asan" -DCMAKE_BUILD_TYPE=Debug -DDDPRUN_FUZZ=ON \
    -DDDPRUN_SANITIZER=address,undefined -DDDPRUN_WITH_CUDA=OFF -DDDPRUN_BUILD_BENCH=OFF
}
fuzz_build() {
  TARGETS="$(cd tests/fuzz && ls -- *_fuzzer.cc | sed 's/\.cc$//' | xargs)" sanitizer_build
}
# fuzz_tests SECONDS: each target for SECONDS over its corpus, as CTest tests "fuzz: <target>".
fuzz_tests() {
  DDPRUN_FUZZ_SECONDS=$1 run_tests "$BUILD_DIR-asan" --tests-regex "^fuzz:"
}

# The project's C and C++ sources (the build trees' generated files are not).
c_sources() {
  find base agent launcher daemon monitoring rendezvous runtime proto tests bench examples \
    packaging cmake \( -name '*.c' -o -name '*.cc' -o -name '*.h' \) -print | sort
}

# format_check: fails when a source differs from what clang-format 14 (Debian 12's) makes of it
# under .clang-format, naming the files; `./run.sh format` rewrites them. The files go to
# clang-format in batches on every core (one process per file took a minute); a failure that
# names no file (clang-format itself failing) fails the check with clang-format's words.
format_check() {
  local report status=0 unformatted
  report=$(c_sources | xargs -P "$(nproc)" -n 40 clang-format-14 --dry-run --Werror 2>&1 \
    > /dev/null) || status=$?
  unformatted=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*$/\1/p' \
    <<<"$report" | sort -u | xargs)
  if [ -n "$unformatted" ]; then
    echo "run.sh: clang-format lays out $(wc -w <<<"$unformatted") file(s) differently:" \
      "$unformatted; run ./run.sh format" >&2
    return 1
  fi
  if [ "$status" -ne 0 ]; then
    echo "run.sh: clang-format-14 failed: $report" >&2
    return 1
  fi
}

# The speed guard (bench/speed_guard.py): ddprun's launch and restart against the machine's floor
# in the same run, failing over 3x; two tests in the counts. Then the same for the wheel's
# ddprun (the tests stage built it into $BUILD_DIR/wheelhouse), installed into a new virtual
# environment: two tests more.
speed_guard() {
  local status=0 wheel venv
  speed_guard_of "" || status=1
  wheel=$(ls "$BUILD_DIR"/wheelhouse/ddprun-*.whl 2>/dev/null | head -n 1)
  if [ -z "$wheel" ]; then
    echo "run.sh: no wheel in $BUILD_DIR/wheelhouse: its speed guard is skipped"
    SKIPPED=$((SKIPPED + 2))
    return $status
  fi
  venv=$(mktemp -d)
  if /usr/bin/python3 -m venv "$venv" &&
    "$venv/bin/pip" install --quiet --no-index --no-deps --disable-pip-version-check "$wheel"; then
    echo "run.sh: the wheel's ddprun ($(basename "$wheel")):"
    speed_guard_of "$venv/bin/ddprun" || status=1
  else
    echo "run.sh: $wheel did not install into a new environment" >&2
    FAILED=$((FAILED + 2)) status=1
  fi
  rm -rf "$venv"
  return $status
}
# speed_guard_of DDPRUN: the guard of that ddprun (empty: the build's), counted.
speed_guard_of() {
  local output status=0 passed failed
  output=$(BUILD_DIR="$BUILD_DIR" DDPRUN="$1" python3 bench/speed_guard.py) || status=$?
  echo "$output"
  read -r passed failed <<<"$(sed -n 's/^speed guard: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' <<<"$output")"
  PASSED=$((PASSED + ${passed:-0})) FAILED=$((FAILED + ${failed:-2}))
  return $status
}

case "${1:-}" in
  deps)
    deps
    ;;
  build)
    deps
    build "$BUILD_DIR"
    ;;
  demo)
    deps
    # Only what the demo runs: the launcher and the example trainer (`test` builds the rest).
    TARGETS="ddprun train" build "$BUILD_DIR"
    echo "run.sh: ddprun --standalone --nproc_per_node=2 $BUILD_DIR/bin/train"
    "$BUILD_DIR/bin/ddprun" --standalone --nproc_per_node=2 "$BUILD_DIR/bin/train"
    ;;
  test)
    trap report EXIT
    stage "install the test packages" deps "${TEST_PACKAGES[@]}"
    stage "install the pinned torch (tests/pytorch/torch_pin.txt) into the project's environment" torch_venv
    stage "install the wheel's tools (tests/packaging/wheel_tools_pin.txt) into the project's environment" wheel_tools
    stage "the sources' layout: clang-format" format_check
    stage "test names CTest and Catch2 can report: no ';', no late ': '" python3 tests/tools/test_names_check.py tests
    stage "build" build "$BUILD_DIR"
    # A test that fails is run once more before it counts as failed: hooked PyTorch jobs on
    # torch 2.15 now and then abort at their very end ("terminate called without an active
    # exception", about once a full run; an open defect, bench/RESULTS.md, 2026-12-07).
    stage "tests" run_tests "$BUILD_DIR" --repeat until-pass:2
    stage "clang build with -Wthread-safety -Werror, under ThreadSanitizer" clang_tsan_build
    stage "tests under ThreadSanitizer" tsan_tests
    if [ "${DDPRUN_SKIP_SANITIZERS:-0}" != 1 ]; then
      stage "clang 16 build with AddressSanitizer, UBSan and libFuzzer: the tests and the fuzz targets" \
        sanitizer_build
      # Every test but three kinds. The PyTorch tests labelled plain_build_only (what PyTorch
      # does under ddprun, tests/CMakeLists.txt says why); ddprun's own code for warm workers
      # runs here through its tests, tagged [sanitizers]. The sweep of every collective, type
      # and op at world sizes 1 to 8 (its arithmetic is the plain build's to show, in 17 s; 94 s
      # here): the other collectives tests run the same ring and links here, every collective
      # at 4 ranks as processes, all-reduces of several MiB at 2, 3 and 8 ranks, registered
      # buffers at 1, 2, 3 and 5. And the fuzzers, which have a stage of their own.
      # LeakSanitizer's suppressions: third-party memory only, each with its evidence. They match
      # function names, so reports are symbolized: by clang 14's llvm-symbolizer (clang 16's own
      # is not installed), named by its real path, as the sanitizers want it.
      ASAN_SYMBOLIZER_PATH="$(readlink -f "$(command -v llvm-symbolizer)")" \
        LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan_suppressions.txt" \
        stage "tests under AddressSanitizer and UndefinedBehaviorSanitizer" \
        run_tests "$BUILD_DIR-asan" --label-exclude "^plain_build_only$" \
        --exclude-regex "^fuzz:|every collective, type and op"
    else
      stage "fuzz targets: clang 16 build with libFuzzer, AddressSanitizer and UBSan" fuzz_build
    fi
    stage "fuzz targets, 10 s each" fuzz_tests 10
    stage "the Debian package: build, install, run, purge" packaging/check_deb.sh "$BUILD_DIR-deb"
    stage "speed guard: launch and restart against the machine's floor, the build's and the wheel's" speed_guard
    ;;
  torch-venv)
    # The pinned torch's environment, installed when missing; its interpreter on stdout.
    deps python3-venv >&2
    torch_venv >&2
    echo "$DDPRUN_TEST_TORCH_PYTHON"
    ;;
  format)
    deps clang-format-14
    c_sources | xargs clang-format-14 -i
    ;;
  fuzz)
    trap report EXIT
    stage "install clang 16" deps "${FUZZ_PACKAGES[@]}"
    stage "fuzz targets: clang 16 build with libFuzzer, AddressSanitizer and UBSan" fuzz_build
    stage "fuzz targets, ${2:-300} s each" fuzz_tests "${2:-300}"
    ;;
  *)
    sed -n '2,/^# Environment/p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
