#!/usr/bin/env bash
# The checks that need a GPU, in one run, for a session lent a GPU machine (the `device` tool):
# builds what they need, runs every test tagged [gpu] (the NCCL backend; layers, losses and
# optimizers on CUDA against the CPU; DDP over NCCL against DDP on the CPU), trains the seeds'
# model on the GPU, and measures ddp-mlp-bench on the GPU beside the CPU. Everything it prints
# also goes to ${OUT:-gpu-results}/gpu_check.log. Not part of the test suite.
#   bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-results}
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
build=${BUILD_DIR:-build}
status=0

echo "== nvidia-smi"
nvidia-smi || echo "(no nvidia-smi)"
echo "== build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
  cmake --build "$build" -j "$(nproc)" --target unit_tests runtime_thread_tests ddprun ddprund \
    ddp-mlp-bench train || exit 1
echo "== [gpu] unit tests"
"$build/bin/unit_tests" "[gpu]" --success --reporter compact || status=1
echo "== [gpu] integration tests"
"$build/bin/runtime_thread_tests" "[gpu]" --success --reporter compact || status=1
echo "== the seeds' model on the GPU"
"$build/bin/ddprun" --standalone --nproc_per_node=1 "$build/bin/train" --device cuda \
  --epochs 2 || status=1
echo "== ddp-mlp-bench, world 1: GPU, then CPU"
DEVICE=cuda "$build/bin/ddprun" --standalone --nproc_per_node=1 "$build/bin/ddp-mlp-bench" ||
  status=1
"$build/bin/ddprun" --standalone --nproc_per_node=1 "$build/bin/ddp-mlp-bench" || status=1
echo "== done: status $status"
exit $status
