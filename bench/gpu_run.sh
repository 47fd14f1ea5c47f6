#!/bin/sh
# DIR/gpu_run.sh [OUT]: the GPU checks, run on a GPU machine from the bundle that
# bench/gpu_bundle.sh built (this file is copied into it). One command, within 5 minutes:
#   nvidia-smi      the GPU and its driver
#   gpu test: NAME  every test tagged [gpu] of unit_tests and runtime_thread_tests, one by one:
#                   layers, losses and optimizers on CUDA against the CPU, NCCL's collectives,
#                   DDP over NCCL against DDP on the CPU, step for step
#   train           the seeds' model (examples/train.cc) on the GPU, to the CPU's held-out loss
#                   (within 2%), both run here under ddprun
#   all-reduce      NCCL's all-reduce, 4 KiB to 256 MiB: bus bandwidth by size, as nccl-tests
#   throughput: M   the training throughput of the seeds' model and of ddp-mlp-bench's, ddprun's
#                   runtime beside PyTorch DDP (the machine's torch) on the same GPU: same model,
#                   batch, optimizer and precision (float32), in this run
#
# What it needs of the machine: a POSIX shell, glibc, the NVIDIA driver, and PyTorch with the CUDA
# libraries that DIR/cuda-libraries names (its nvidia-* packages), found through `python3`; or
# DDPRUN_CUDA_LIBRARY_PATH, folders separated by ':', to find them in instead. It runs no program
# outside the bundle but the shell's builtins, and nvidia-smi, python3 and timeout where they are
# there: a check that needs one that is missing is skipped, with that reason. Where a library is
# missing, it says so in one line and stops (exit 3); nothing is reported as run.
#
# Prints one line a check, "gpu_run: CHECK: passed|FAILED|skipped (REASON)[: FIGURES]", also kept
# in OUT/summary.txt, with each check's whole output in OUT/<check>.log. OUT: the argument, else
# $OUT, else ./gpu-results. Exit status 0 when no check failed, else 1.
set -u
case $0 in */*) bundle=${0%/*} ;; *) bundle=. ;; esac
bundle=$(cd "$bundle" && pwd) || exit 1
out=${1:-${OUT:-gpu-results}}
if [ ! -d "$out" ]; then
  if command -v mkdir > /dev/null 2>&1; then mkdir -p "$out" || exit 1; else
    echo "gpu_run: the results folder $out does not exist (and there is no mkdir here)" >&2
    exit 2
  fi
fi
: > "$out/summary.txt" || exit 1
failed=0
gpu_missing=""  # why the GPU checks cannot run, once a [gpu] test has said so

# report CHECK RESULT [DETAIL]: one summary line.
report() {
  line="gpu_run: $1: $2${3:+: $3}"
  printf '%s\n' "$line"
  printf '%s\n' "$line" >> "$out/summary.txt"
  case $2 in FAILED*) failed=1 ;; esac
}

# log_name CHECK: the check's log file, its name made of letters, digits, '-' and '_'.
log_name() {
  name=$1 safe=""
  while [ -n "$name" ]; do
    rest=${name#?}
    char=${name%"$rest"}
    case $char in [A-Za-z0-9_-]) safe=$safe$char ;; *) safe=${safe}_ ;; esac
    name=$rest
  done
  echo "$out/$safe.log"
}

# catch_spec NAME: a Catch2 test spec that matches the test NAME alone: ',', brackets and the
# other characters Catch reads in a spec escaped with '\'.
catch_spec() {
  name=$1 spec=""
  while [ -n "$name" ]; do
    rest=${name#?}
    char=${name%"$rest"}
    case $char in
      \\) spec="$spec\\\\" ;;
      [],[*~\"]) spec="$spec\\$char" ;;
      *) spec=$spec$char ;;
    esac
    name=$rest
  done
  printf '%s\n' "$spec"
}

timeout_program=$(command -v timeout 2> /dev/null || true)
# The whole run within 5 minutes, where `timeout` is there: this script runs again as its child,
# and a run cut off says so last.
if [ -n "$timeout_program" ] && [ -z "${DDPRUN_GPU_RUN_LIMITED:-}" ]; then
  DDPRUN_GPU_RUN_LIMITED=1 "$timeout_program" -k 10 290 /bin/sh "$0" "$out"
  status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    report gpu_run FAILED "stopped at its limit of 290 s; what it had found is above"
    exit 1
  fi
  exit "$status"
fi
# limited SECONDS COMMAND...: the command, ended after SECONDS where `timeout` is there (status
# 124 then).
limited() {
  seconds=$1
  shift
  if [ -n "$timeout_program" ]; then "$timeout_program" -k 5 "$seconds" "$@"; else "$@"; fi
}

# line_with TEXT FILE: what follows TEXT in the first line of FILE that holds it (ddprun may put
# "[rank0]: " before a worker's lines).
line_with() {
  while IFS= read -r candidate; do
    case $candidate in *"$1"*)
      printf '%s\n' "${candidate#*"$1"}"
      return 0
      ;;
    esac
  done < "$2"
  return 1
}

# micro DECIMAL: a non-negative decimal with at most 6 places as an integer count of millionths,
# for the shell's integer arithmetic.
micro() {
  whole=${1%%.*} fraction=""
  case $1 in *.*) fraction=${1#*.} ;; esac
  fraction=${fraction}000000
  while [ ${#fraction} -gt 6 ]; do fraction=${fraction%?}; done
  digits=$whole$fraction
  while case $digits in 0?*) true ;; *) false ;; esac; do digits=${digits#0}; done
  echo "${digits:-0}"
}

# --- the CUDA libraries, from the machine's PyTorch ------------------------------------------
folders=${DDPRUN_CUDA_LIBRARY_PATH:-}
if [ -z "$folders" ]; then
  site=""
  if command -v python3 > /dev/null 2>&1; then
    site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' \
      2> /dev/null) || site=""
  fi
  if [ -z "$site" ]; then
    echo "gpu_run: no PyTorch here (python3 -c 'import torch' failed or python3 is missing):" \
      "the bundle runs on its CUDA libraries; name their folders in DDPRUN_CUDA_LIBRARY_PATH"
    exit 3
  fi
  for folder in "$site"/nvidia/*/lib; do
    [ -d "$folder" ] && folders=$folders${folders:+:}$folder
  done
fi
library_path=""
while IFS= read -r library; do
  found=""
  old_ifs=$IFS IFS=:
  for folder in $folders; do
    if [ -e "$folder/$library" ]; then found=$folder; break; fi
  done
  IFS=$old_ifs
  if [ -z "$found" ]; then
    echo "gpu_run: $library is not in this machine's PyTorch (searched ${folders:-no folder}):" \
      "install PyTorch with its CUDA 13 packages, or name the folder in DDPRUN_CUDA_LIBRARY_PATH"
    exit 3
  fi
  case ":$library_path:" in *":$found:"*) ;; *) library_path=$library_path${library_path:+:}$found ;; esac
done < "$bundle/cuda-libraries"
export LD_LIBRARY_PATH="$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=$bundle/bin

# --- nvidia-smi ----------------------------------------------------------------------------
if command -v nvidia-smi > /dev/null 2>&1; then
  log=$(log_name nvidia-smi)
  if limited 20 nvidia-smi > "$log" 2>&1; then
    gpu=$(limited 20 nvidia-smi --query-gpu=name,driver_version,memory.total \
      --format=csv,noheader 2>> "$log")
    report nvidia-smi passed "$gpu"
  else
    report nvidia-smi FAILED "exit $?, $log"
  fi
else
  report nvidia-smi "skipped (no nvidia-smi here)"
fi

# --- every [gpu] test, one process each ----------------------------------------------------
for tests in unit_tests runtime_thread_tests; do
  names=$out/$tests.names
  # Catch's exit status here is the number of tests it listed.
  "$bin/$tests" --list-test-names-only "[gpu]" > "$names" 2>&1
  status=$?
  if [ "$status" -eq 0 ] || [ "$status" -ge 126 ]; then
    report "gpu tests of $tests" FAILED "listing them: exit $status, $names"
    continue
  fi
  while IFS= read -r test_name; do
    [ -n "$test_name" ] || continue
    log=$(log_name "gpu test $test_name")
    limited 60 "$bin/$tests" "$(catch_spec "$test_name")" -w NoTests --success \
      --reporter compact > "$log" 2>&1
    status=$?
    case $status in
      0) report "gpu test: $test_name" passed ;;
      77)
        reason=$(line_with "skipped: " "$log") || reason="no reason given"
        gpu_missing=${gpu_missing:-$reason}
        report "gpu test: $test_name" "skipped ($reason)"
        ;;
      124) report "gpu test: $test_name" FAILED "no end within 60 s, $log" ;;
      *) report "gpu test: $test_name" FAILED "exit $status, $log" ;;
    esac
  done < "$names"
done

# gpu_check CHECK [DETAIL]: whether the GPU checks can run; if not, CHECK is reported skipped.
gpu_check() {
  if [ -n "$gpu_missing" ]; then
    report "$1" "skipped ($gpu_missing)" "${2:-}"
    return 1
  fi
}

# --- the seeds' model: the GPU's held-out loss against the CPU's ---------------------------
# train_loss DEVICE: trains on DEVICE under ddprun; prints the held-out loss after training.
train_loss() {
  log=$(log_name "train $1")
  limited 60 "$bin/ddprun" --standalone --nproc_per_node=1 "$bin/train" --device "$1" --epochs 2 \
    > "$log" 2>&1 || return 1
  # "held-out loss A -> B after N steps": B
  losses=$(line_with "held-out loss " "$log") || return 1
  after=${losses#* -> }
  printf '%s\n' "${after%% *}"
}
# The CPU's run needs no GPU: without one it still shows the bundle's ddprun and train at work.
if ! cpu_loss=$(train_loss cpu); then
  report train FAILED "train --device cpu: $(log_name "train cpu")"
elif gpu_check train "the CPU's held-out loss: $cpu_loss"; then
  if ! gpu_loss=$(train_loss cuda); then
    report train FAILED "train --device cuda: $(log_name "train cuda")"
  else
    cpu=$(micro "$cpu_loss") gpu=$(micro "$gpu_loss")
    difference=$((gpu > cpu ? gpu - cpu : cpu - gpu))
    if [ $((100 * difference)) -le $((2 * cpu + 100)) ]; then
      report train passed "held-out loss $gpu_loss on the GPU, $cpu_loss on the CPU"
    else
      report train FAILED "held-out loss $gpu_loss on the GPU, $cpu_loss on the CPU: over 2% apart"
    fi
  fi
fi

# --- NCCL's all-reduce by size -------------------------------------------------------------
log=$(log_name all-reduce)
if gpu_check all-reduce; then
  (
    export DEVICE=cuda
    limited 90 "$bin/ddprun" --standalone --nproc_per_node=1 "$bin/ddp-allreduce-bench" 4096 \
      268435456
  ) > "$log" 2>&1
  status=$?
  rows=0 wrong=0 last=""
  while IFS= read -r line; do
    case $line in "["*"]: "*) line=${line#*]: } ;; esac  # ddprun's "[rank0]: "
    case $line in "#"* | *size*) continue ;; esac
    set -- $line
    [ $# -ge 8 ] || continue
    rows=$((rows + 1)) wrong=$((wrong + $7))
    last="$1 B: $5 GB/s algbw, $6 GB/s busbw"
  done < "$log"
  if [ "$status" -ne 0 ] || [ "$rows" -eq 0 ]; then
    report all-reduce FAILED "exit $status, $rows sizes, $log"
  elif [ "$wrong" -ne 0 ]; then
    report all-reduce FAILED "$wrong wrong elements, $log"
  else
    report all-reduce passed "$rows sizes, none wrong; at $last (one rank: busbw 0, $log)"
  fi
fi

# --- throughput beside PyTorch DDP ---------------------------------------------------------
# throughput NAME ENVIRONMENT...: ddp-mlp-bench and the anchor on the GPU, with that model.
throughput() {
  check="throughput: $1"
  shift
  log=$(log_name "$check") anchor_log=$(log_name "$check PyTorch")
  gpu_check "$check" || return 0
  if ! command -v python3 > /dev/null 2>&1; then
    report "$check" "skipped (no python3 here for PyTorch DDP)"
    return 0
  fi
  (
    export DEVICE=cuda "$@"
    limited 60 "$bin/ddprun" --standalone --nproc_per_node=1 "$bin/ddp-mlp-bench"
  ) > "$log" 2>&1 || {
    report "$check" FAILED "ddp-mlp-bench: exit $?, $log"
    return 0
  }
  (
    export DEVICE=cuda "$@"
    limited 90 "$bin/ddprun" --standalone --nproc_per_node=1 python3 "$bundle/anchors/ddp_mlp.py"
  ) > "$anchor_log" 2>&1 || {
    report "$check" FAILED "PyTorch DDP: exit $?, $anchor_log"
    return 0
  }
  ours=$(line_with "ddp world=" "$log") theirs=$(line_with "torch-ddp world=" "$anchor_log")
  ours=${ours##*samples_per_s=} theirs=${theirs##*samples_per_s=}
  ours_micro=$(micro "$ours") theirs_micro=$(micro "$theirs")
  if [ "$ours_micro" -eq 0 ] || [ "$theirs_micro" -eq 0 ]; then
    report "$check" FAILED "no samples/s in $log or $anchor_log"
    return 0
  fi
  ratio=$((100 * ours_micro / theirs_micro))
  report "$check" passed \
    "ddprun $ours samples/s, PyTorch DDP $theirs: $((ratio / 100)).$((ratio % 100 / 10))$((ratio % 10))x"
}
throughput "the seeds' model" IN=10 HIDDEN=50 LAYERS=2 BATCH=32 STEPS=500
throughput "ddp-mlp-bench" STEPS=200

exit $failed
