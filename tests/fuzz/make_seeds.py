#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, tests/fuzz/corpus/<target>/<seed>: a few valid inputs
of each parser, from which libFuzzer mutates. Run again after changing a seed here; inputs that
are not seeds (the regression inputs of crashes found, named crash-*) are left as they are.

The RPC seeds are protobuf messages in the wire format, written by hand here (the test machine
need not have Python's protobuf): a field is its tag (number << 3 | wire type) and its value.

Usage: python3 tests/fuzz/make_seeds.py
"""
import os
import struct
import zlib

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def argv(*args):
    return "\0".join(args)


COMMAND_LINES = {
    "standalone": argv("--nproc_per_node=2", "--standalone", "/bin/true"),
    "elastic": argv("--nnodes=1:3", "--nproc-per-node=4", "--rdzv_backend=c10d",
                    "--rdzv_endpoint=127.0.0.1:29400", "--rdzv_id=job7",
                    "--rdzv_conf=join_timeout=5,last_call_timeout=1", "--max_restarts=3",
                    "-r", "0:1,1:2", "-t", "3", "/bin/true", "--an-argument"),
    "hosts": argv("--hosts=node1,node2:29600", "--nproc_per_node=2", "--token-file=/nonexistent",
                  "train", "--epochs=3"),
    "hang": argv("--hang_timeout=2", "--hang_first_timeout=30", "--hang_action=stacks",
                 "--hang_progress=output", "--nproc_per_node=1", "/bin/true"),
    "static": argv("--nnodes=2", "--node_rank=1", "--master_addr=10.0.0.1", "--master_port=29500",
                   "--local_addr=10.0.0.2", "-m", "json.tool"),
    "console": argv("--local_ranks_filter=0,1", "--tty", "--stdin", "--export=A=1",
                    "--shutdown_timeout=5", "--no_python", "/bin/echo", "hi"),
    "gpu": argv("--nproc_per_node=gpu", "--run_path", "script.py"),
    "help": argv("--help"),
    "version": argv("--version"),
    "hostfile": argv("--hostfile=/dev/null", "--detach", "/bin/true"),
    "tls": argv("--nnodes=2", "--rdzv_endpoint=h:1", "--tls-cert=c.pem", "--tls-key=k.pem",
                "--tls-ca=ca.pem", "/bin/true"),
    "compat": argv("--use_env", "--local-rank=0", "--role=trainer", "--start_method=spawn",
                   "--monitor_interval=0.1", "--log_dir=logs", "/bin/true"),
}

RDZV_CONFS = {
    "basic": "join_timeout=5,last_call_timeout=1",
    "all": "heartbeat_timeout=3,close_timeout=5,hang_timeout=2.5,hang_first_timeout=300",
    "torchrun_keys": "timeout=900,read_timeout=60,is_host=1,store_type=tcp,use_libuv=0",
    "empty": "",
}

DAEMON_CONFIGS = {
    "typical": "# ddprund.conf\nbind = 0.0.0.0\nport = 29400\nport_file = /run/ddprund/port\n\n"
               "agent_program = /usr/bin/ddprun\nallow_root_jobs = false\n",
    "security": "token_file = /nonexistent/token\ntls_cert = c.pem\ntls_key = k.pem\n"
                "tls_ca = ca.pem\n",
}

ERROR_FILES = {
    "record": '{"message": {"message": "ValueError: the loss is NaN", "extraInfo": '
              '{"py_callstack": "Traceback (most recent call last):\\n  File \\"train.py\\", '
              'line 3\\nValueError: the loss is NaN\\n", "timestamp": "1700000000"}}}',
    "plain_message": '{"message": "plain"}',
    "text": "not json at all\n",
}

HOST_LISTS = {  # the first byte: 0 for --hosts, 1 for a --hostfile
    "hosts": "\0node1,node2:29600,10.0.0.7",
    "hostfile": "\1# the cluster\nnode1\nnode2:29600   # a comment\n\n10.0.0.7\n",
}

SLURM_HOSTLISTS = {
    "ranges": "gpu[01-04,07],login1",
    "groups": "n[098-101]-ib[0-1] other,x[1-010]",
    "single": "single",
}

SLURM_STEPS = {
    "step": argv("SLURM_JOB_ID=1234", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=4",
                 "SLURM_NODEID=2", "SLURM_STEP_NODELIST=gpu[07-10]",
                 "SLURM_STEP_TASKS_PER_NODE=1(x4)", "SLURM_GPUS_ON_NODE=8"),
    "gres": argv("SLURM_JOBID=9", "SLURM_STEPID=1", "SLURM_JOB_NUM_NODES=2", "SLURM_NODEID=0",
                 "SLURM_JOB_NODELIST=a,b", "SLURM_TASKS_PER_NODE=1,1",
                 "SLURM_GPUS_PER_NODE=a100:2,v100:2(S:0-1)"),
    "minimal": argv("SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "SLURM_NNODES=1", "SLURM_NODEID=0",
                    "SLURM_NODELIST=n1"),
}


# ---- checkpoints: runtime/src/checkpoint.cc's layout ----
def checkpoint_payload(step, model, optimizer, rng=b"rng-state"):
    out = struct.pack("<qqq", 0, step, 16) + struct.pack("<Q", len(rng)) + rng
    for tensors in (model, optimizer):
        out += struct.pack("<Q", len(tensors))
        for t in tensors:
            out += struct.pack("<Q", len(t)) + struct.pack(f"<{len(t)}f", *t)
    return out


def checkpoint_file(payload):
    return (b"DDPCKPT1" + struct.pack("<IQ", 1, len(payload)) + payload +
            struct.pack("<I", zlib.crc32(payload)))


# ---- protobuf wire format ----
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, value):
    """An int (varint), bytes/str (length-delimited) or a message's bytes."""
    if isinstance(value, bool) or isinstance(value, int):
        return varint(number << 3) + varint(int(value))
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def message(*fields):
    return b"".join(fields)


def scope(job, round_=0):
    return message(field(1, job), field(2, round_))


def call(operation, payload):
    """One call of the rendezvous_rpc input: operation byte, 16-bit length, the message."""
    return bytes([operation]) + struct.pack("<H", len(payload)) + payload


SET, GET, WAIT, ADD, COMPARE_SET, DELETE, DESCRIBE, SESSION_A, SESSION_B = range(9)
WITHOUT_TOKEN = 0x80


def join(job, node, host, nproc, rank=None):
    settings = message(field(1, 1), field(2, 2), field(3, 3), field(4, 5000), field(5, 50),
                       field(6, 3000))
    description = message(field(1, node), field(2, host), field(3, nproc), field(4, 29500))
    if rank is not None:
        description += field(5, rank) + field(6, True)
    return field(1, message(field(1, job), field(2, settings), field(3, description)))


def rpc_seeds():
    store = scope("job")
    yield "store", b"".join([
        call(SET, message(field(1, store), field(2, "key"), field(3, "value"))),
        call(GET, message(field(1, store), field(2, "key"))),
        call(ADD, message(field(1, store), field(2, "counter"), field(3, 5))),
        call(COMPARE_SET, message(field(1, store), field(2, "key"), field(3, "value"),
                                  field(4, "new"))),
        call(WAIT, message(field(1, store), field(2, "key"), field(3, 1000))),
        call(DELETE, message(field(1, store), field(2, "key"))),
    ])
    yield "wait_missing", call(WAIT, message(field(1, store), field(2, "absent"), field(3, 60000)))
    yield "without_token", call(SET | WITHOUT_TOKEN, message(field(1, store), field(2, "k")))
    failure = message(field(1, "10.0.0.2"), field(2, 1), field(3, 0), field(4, 77), field(5, 1))
    progress = message(field(1, 1), field(2, 0), field(4, 7), field(5, 12), field(7, True))
    yield "round", b"".join([
        call(SESSION_A, join("j", "node-a", "10.0.0.1", 2)),
        call(SESSION_B, join("j", "node-b", "10.0.0.2", 2, rank=1)),
        call(SESSION_A, field(2, message(field(1, 1), field(2, progress)))),
        call(DESCRIBE, message(field(1, "j"))),
        call(SESSION_B, field(3, message(field(1, 1), field(3, 1), field(4, failure)))),
        call(SESSION_A, field(4, message(field(1, 1)))),
        call(SESSION_B, field(5, b"")),
        call(DESCRIBE, b""),
    ])


def main():
    for target, seeds in [("command_line", COMMAND_LINES), ("rendezvous_conf", RDZV_CONFS),
                          ("daemon_config_file", DAEMON_CONFIGS),
                          ("worker_error_file", ERROR_FILES), ("host_list", HOST_LISTS),
                          ("slurm_hostlist", SLURM_HOSTLISTS), ("slurm_step", SLURM_STEPS)]:
        for name, data in seeds.items():
            write(target, name, data)
    payload = checkpoint_payload(40, [[1.0, -2.5], [0.125]], [[0.0, 0.0], [1e-3]])
    # The first byte: even, a whole file; odd, a payload the target wraps.
    write("checkpoint", "file", b"\0" + checkpoint_file(payload))
    write("checkpoint", "payload", b"\1" + payload)
    write("checkpoint", "empty_payload", b"\1" + checkpoint_payload(0, [], []))
    for name, data in rpc_seeds():
        write("rendezvous_rpc", name, data)


if __name__ == "__main__":
    main()
