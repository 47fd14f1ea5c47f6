"""The PyTorch side of bench/allreduce.py: gloo's all-reduce of float32 tensors on the CPU, run
by torchrun, from 4 KiB to 64 MiB. For each size, 3 warm-up all-reduces, then as many as fit
256 MiB (3 to 200) timed after a barrier. Rank 0 prints one line a size:
  gloo allreduce n=N bytes=B time_us=T algbw_GBps=A busbw_GBps=U
with nccl-tests' definitions: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
"""
import time

import torch
import torch.distributed as dist

SIZES = [1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26]


def seconds_per_all_reduce(size):
    tensor = torch.ones(size // 4)
    for _ in range(3):
        dist.all_reduce(tensor)
    repeats = max(3, min(200, (1 << 28) // size))
    dist.barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        dist.all_reduce(tensor)
    return (time.perf_counter() - start) / repeats


def main():
    dist.init_process_group("gloo")
    ranks = dist.get_world_size()
    for size in SIZES:
        seconds = seconds_per_all_reduce(size)
        if dist.get_rank() == 0:
            algbw = size / seconds / 1e9
            busbw = algbw * 2 * (ranks - 1) / ranks
            print(f"gloo allreduce n={ranks} bytes={size} time_us={seconds * 1e6:.1f} "
                  f"algbw_GBps={algbw:.3f} busbw_GBps={busbw:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
