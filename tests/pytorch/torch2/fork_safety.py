"""What a warm worker forked from an interpreter that imported torch 2.x (--python_preload=torch)
must be able to do as a fresh one does: OpenMP-parallel operators on several threads, threads
of its own, a DataLoader's worker processes started by fork and by forkserver (Python 3.14's
default), and a gloo process group. Prints on every rank:
  threads_at_start T omp_threads N product P thread_result R all_reduced A
  loader fork S
  loader forkserver S
with T the threads the process had when its script began (1 in a fresh or forked worker)."""
import os
import threading

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def main():
    threads_at_start = len(os.listdir("/proc/self/task"))
    dist.init_process_group("gloo")
    torch.set_num_threads(2)
    matrix = torch.randn(512, 512, generator=torch.Generator().manual_seed(0))
    product = (matrix @ matrix).sum().item()  # an intra-op parallel region, OpenMP's pool
    results = []
    worker = threading.Thread(target=lambda: results.append((matrix @ matrix.T).trace().item()))
    worker.start()
    worker.join()
    total = torch.tensor([product])
    dist.all_reduce(total)
    print("threads_at_start %d omp_threads %d product %.4f thread_result %.4f all_reduced %.4f"
          % (threads_at_start, torch.get_num_threads(), product, results[0], total.item()),
          flush=True)
    data = TensorDataset(torch.arange(64.0).reshape(16, 4))
    for context in ("fork", "forkserver"):
        loader = DataLoader(data, batch_size=4, num_workers=2, multiprocessing_context=context)
        print("loader %s %.1f" % (context, sum(batch[0].sum().item() for batch in loader)),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
