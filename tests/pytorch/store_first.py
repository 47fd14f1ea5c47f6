"""Forms the PyTorch process group as an unmodified DDP script does (gloo, env://), takes one DDP
step, and reports how long init_process_group took. Every rank prints
"init attempt=N seconds=S entered=E left=L store=agent|rank0" (E and L: time.monotonic() as it
called init_process_group and as that returned, one clock for every process of the host, so that
the time from the last rank's arrival to the group's forming can be told from a rank's wait for
another still importing torch), and before it "inherited sockets=N": the sockets it
holds before it opens one (none of ddprun's store may leak into a worker).

With --attempts K, every rank exits 1 after its step in each attempt but the K-th
(TORCHELASTIC_RESTART_COUNT=K-1), so that one job under --max_restarts=K-1 starts the script K
times: each attempt's ranks meet in a store that must hold nothing of the attempt before.

With --debug_server, torch.distributed.debug's worker servers start once the group is formed
(where the installed torch has them): each rank registers its own in the store at
MASTER_ADDR:MASTER_PORT, and rank 0 asks every rank's "ping" handler at the address it finds
there, as the debug server's frontend does. Rank 0 prints "debug ranks=W answered=A".

With --junk_first, rank 0 first opens a connection of its own to MASTER_ADDR:MASTER_PORT and
sends what no TCPStore client sends; it prints "junk closed" once the store has closed that
connection, and the group then forms as ever.
"""
import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist


def ping_every_rank_through_the_store():
    import urllib.request

    from torch.distributed.debug import start_debug_server, stop_debug_server
    from torch.distributed.debug._store import tcpstore_client

    # The frontend's own HTTP port: 0, any free one (this script does not browse it).
    start_debug_server(port=0, start_method="spawn")
    dist.barrier()  # every rank has registered its worker server
    if dist.get_rank() == 0:
        # What the frontend's fetch_all does (its HTTP clients, aiohttp or requests, are not
        # installed here): every rank's address from the store, then each one's handler.
        keys = [f"rank{rank}" for rank in range(dist.get_world_size())]
        addresses = [value.decode() for value in tcpstore_client().multi_get(keys)]
        answered = 0
        for address in addresses:
            request = urllib.request.Request(f"{address}/handler/ping", method="POST")
            with urllib.request.urlopen(request, timeout=60) as response:
                answered += response.status == 200
        print(f"debug ranks={len(addresses)} answered={answered}", flush=True)
    dist.barrier()  # rank 0 has fetched from every worker server
    if dist.get_rank() == 0:
        stop_debug_server()
    else:  # stop_debug_server stops rank 0's frontend too, and refuses where there is none
        import torch.distributed.debug as debug

        debug._WORKER_SERVER.shutdown()


def inherited_sockets():
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{name}").startswith("socket:")
        except OSError:
            pass  # listdir's own, closed already
    return count


def send_junk_to_the_store():
    address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    with socket.create_connection(address, timeout=60) as junk:
        junk.sendall(b"\xff" * 64)  # no command of torch 1.13's or 2.x's has this number
        while junk.recv(4096):
            pass  # until the store closes it
    print("junk closed", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--debug_server", action="store_true")
    parser.add_argument("--junk_first", action="store_true")
    args = parser.parse_args()
    print(f"inherited sockets={inherited_sockets()}", flush=True)
    if args.junk_first and os.environ["RANK"] == "0":
        send_junk_to_the_store()

    entered = time.monotonic()
    dist.init_process_group("gloo")
    left = time.monotonic()
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    store = "agent" if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True" else "rank0"
    print(f"init attempt={attempt} seconds={left - entered:.3f} entered={entered:.6f} "
          f"left={left:.6f} store={store}", flush=True)

    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.ones(8, 4)).sum().backward()

    if args.debug_server:
        ping_every_rank_through_the_store()
    dist.destroy_process_group()
    if attempt + 1 < args.attempts:
        sys.exit(1)


if __name__ == "__main__":
    main()
