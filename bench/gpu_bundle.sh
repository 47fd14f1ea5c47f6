#!/usr/bin/env bash
# bench/gpu_bundle.sh DIR: builds here, into DIR, everything the GPU checks run, for a GPU machine
# that has its driver, PyTorch with its CUDA wheels, and a shell, and nothing else of ours: no
# gRPC, Protobuf, Boost, spdlog, Catch2, OpenBLAS or compiler is needed there. Then, on that
# machine, one command runs the checks: DIR/gpu_run.sh [OUT] (bench/gpu_run.sh says what).
#
# DIR holds (at most 48 MiB, or the bundle is refused):
#   bin/       unit_tests and runtime_thread_tests (their [gpu] tests), train, ddp-mlp-bench,
#              ddp-allreduce-bench, ddprun; libexec/ddprun/ddprun, which ddprun runs
#   lib/       the shared libraries they load but glibc's and CUDA's: gRPC, Protobuf, Abseil,
#              OpenSSL, libstdc++ (Debian's), found through the programs' RPATH ($ORIGIN/../lib)
#   anchors/   PyTorch DDP's side of the throughput comparison (bench/anchors/ddp_mlp.py)
#   gpu_run.sh, and cuda-libraries: the CUDA libraries the programs load, one soname a line
# So a program loads from outside DIR only glibc, the driver's libcuda (loaded by the CUDA
# runtime) and the CUDA libraries named in cuda-libraries (the CUDA runtime, cuBLAS, NCCL), which
# gpu_run.sh finds in the machine's PyTorch. gRPC is shared here, not linked into each program as
# in the main build: seven programs with it linked in were 115 MiB. The CPU matrix products use
# Debian's reference BLAS, linked in, instead of OpenBLAS (25 MiB linked in, 36 as a library).
# GPU code is machine code for sm_90 (H100, H200) and PTX for later GPUs.
#
# Built in BUILD_DIR-gpu-bundle (default build-gpu-bundle), beside the main build: the same
# compiler flags, so ccache gives back what the main build compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ]; then
  echo "usage: bench/gpu_bundle.sh DIR" >&2
  exit 2
fi
dir=$1
build=${BUILD_DIR:-build}-gpu-bundle
limit_mib=48
reference_blas=/usr/lib/x86_64-linux-gnu/blas/libblas.a
static_zlib=/usr/lib/x86_64-linux-gnu/libz.a
for archive in "$reference_blas" "$static_zlib"; do
  if [ ! -f "$archive" ]; then
    echo "gpu_bundle: $archive is missing; install libblas-dev and zlib1g-dev (./run.sh deps)" >&2
    exit 1
  fi
done
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true

mkdir -p "$build"
# The RPATH is DT_RPATH (--disable-new-dtags), not DT_RUNPATH: it also finds what the libraries
# in lib/ load in turn. '\$': the link runs in a shell, which must leave $ORIGIN to the loader.
# --as-needed: what the programs link but never call is not loaded.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDPRUN_WERROR=ON \
  -DDDPRUN_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" \
  -DDDPRUN_STATIC_GRPC=OFF -DDDPRUN_BLAS_LIBRARY="$reference_blas" -DZLIB_LIBRARY="$static_zlib" \
  -DCMAKE_SKIP_RPATH=ON \
  -DCMAKE_EXE_LINKER_FLAGS='-Wl,--as-needed -Wl,--disable-new-dtags -Wl,-rpath,\$ORIGIN/../lib:\$ORIGIN/../../lib' \
  > "$build/configure.log" ||
  { cat "$build/configure.log" >&2; exit 1; }
# cmake/CudaDetection.cmake's verdict.
if ! grep -q '^-- ddprun: CUDA ON (.*), NCCL ON$' "$build/configure.log"; then
  echo "gpu_bundle: CUDA and NCCL were not found (the toolkit under /usr/local/cuda, nccl.h and" \
    "libnccl with it): the bundle's GPU code cannot be built here" >&2
  exit 1
fi
programs=(unit_tests runtime_thread_tests train ddp-mlp-bench ddp-allreduce-bench ddprun)
cmake --build "$build" -j "$(nproc)" --target "${programs[@]}"

staging="$dir.partial"
rm -rf "$staging"
mkdir -p "$staging/bin" "$staging/libexec/ddprun" "$staging/lib" "$staging/anchors"
# Without their debug information (90% of their size); symbols stay, for stacks.
for program in "${programs[@]}"; do
  objcopy --strip-debug "$build/bin/$program" "$staging/bin/$program"
done
objcopy --strip-debug "$build/libexec/ddprun/ddprun" "$staging/libexec/ddprun/ddprun"
cp bench/anchors/ddp_mlp.py "$staging/anchors/"
cp bench/gpu_run.sh "$staging/gpu_run.sh"
chmod +x "$staging/gpu_run.sh"
# What they load, as this machine resolves it: glibc's and CUDA's libraries stay outside.
glibc='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil)\.so'
cuda='^lib(cudart|cublas|cublasLt|nccl|cuda)\.so'
for program in "$staging"/bin/* "$staging"/libexec/ddprun/ddprun; do
  ldd "$program" | sed -n 's/^[[:space:]]*\([^ ]*\) => \(.*\) (0x[0-9a-f]*)$/\1 \2/p'
done | sort -u | while read -r soname path; do
  if grep -qE "$glibc|$cuda" <<<"$soname"; then continue; fi
  if [ "$path" = "not found" ]; then
    echo "gpu_bundle: $soname, which the programs load, is not found here" >&2
    exit 1
  fi
  cp -L "$path" "$staging/lib/$soname"
done
# The CUDA libraries the programs load, directly or through another (cuBLAS loads cuBLASLt), for
# gpu_run.sh to find on the GPU machine.
for program in "$staging"/bin/* "$staging"/libexec/ddprun/ddprun; do
  ldd "$program" | sed -n 's/^[[:space:]]*\(lib[^ ]*\) => .*/\1/p' | grep -E "$cuda" || true
done | sort -u > "$staging/cuda-libraries"

size_kib=$(du -sk "$staging" | cut -f1)
if [ "$size_kib" -gt $((limit_mib * 1024)) ]; then
  echo "gpu_bundle: the bundle is $((size_kib / 1024)) MiB, over its $limit_mib MiB:" >&2
  du -k "$staging"/bin/* "$staging"/libexec/ddprun/ddprun | sort -rn | head -5 >&2
  rm -rf "$staging"
  exit 1
fi
rm -rf "$dir"
mv "$staging" "$dir"
echo "gpu_bundle: $dir: $((size_kib / 1024)) MiB of $limit_mib;" \
  "CUDA libraries from the GPU machine's PyTorch: $(xargs < "$dir/cuda-libraries")"
