"""Prints what a worker can observe of how it was started, one `name: value` line each, so that
a test can compare a worker ddprun started by exec with one forked by --python_preload.
Nothing printed depends on the pid or the run (the test drops the variables that do)."""
import ctypes
import os
import re
import resource
import signal
import sys

facts = {
    "argv": sys.argv,
    "orig_argv": sys.orig_argv[1:],  # the interpreter's path is the same in both
    "name": __name__,
    "file": __file__,
    "path0": sys.path[0],
    "cwd": os.getcwd(),
    "main_spec": getattr(sys.modules["__main__"].__spec__, "name", None),
    "cmdline": open("/proc/self/cmdline", "rb").read().rstrip(b"\0").split(b"\0")[1:],
    "parent": open("/proc/%d/comm" % os.getppid()).read().strip(),
    "own_process_group": os.getpgid(0) == os.getpid(),
    "own_session": os.getsid(0) == os.getpid(),
    "stdio_ttys": [os.isatty(fd) for fd in (0, 1, 2)],
    "stdout": (sys.stdout.line_buffering, sys.stdout.write_through, sys.stdout.encoding),
    "stderr": (sys.stderr.line_buffering, sys.stderr.write_through, sys.stderr.errors),
    "signals_blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "sigint": str(signal.getsignal(signal.SIGINT)),
    "sigpipe": str(signal.getsignal(signal.SIGPIPE)),
    "rlimit_nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
    "rlimit_core": resource.getrlimit(resource.RLIMIT_CORE),
    "umask": os.umask(0o22),
    "hash_randomization": sys.flags.hash_randomization,
    "hash_of_abc_with_seed": hash("abc") if os.environ.get("PYTHONHASHSEED") else None,
    "cpus": sorted(os.sched_getaffinity(0)),
    "memory_policy_preferred": " prefer:" in open("/proc/self/numa_maps").read(),
}


def open_descriptors():
    """Each open descriptor and what it is, without what differs by run: the progress page's
    number is the agent's own, pipes' inode numbers, the log directory's name."""
    described = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue
        if target.startswith("/proc/"):
            continue  # listdir's own
        target = re.sub(r"\[\d+\]", "", re.sub(r"/tmp/ddprun_[^/]+/.*/", "LOG_DIR/", target))
        target = re.sub(r"\.\d+\.txt$", ".PID.txt", target)
        number = "page" if name == os.environ.get("DDPRUN_PROGRESS_FD") else name
        described.append("%s=%s" % (number, target))
    return sorted(described)


def proc_environ():
    """/proc/self/environ's entries, as ps e, py-spy and psutil read them: up to the first empty
    one (a forked worker's area ends in NULs)."""
    with open("/proc/self/environ", "rb") as environ:
        entries = environ.read().split(b"\0")
    return entries[:entries.index(b"")] if b"" in entries else entries


facts["fds"] = open_descriptors()
shown = proc_environ()
facts["proc_environ_is_os_environ"] = sorted(shown) == sorted(
    os.fsencode(key) + b"=" + os.fsencode(value) for key, value in os.environ.items())
facts["proc_environ_rank"] = sorted(entry for entry in shown
                                    if entry.split(b"=", 1)[0] in (b"RANK", b"LOCAL_RANK"))
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
facts["c_environ_is_os_environ"] = all(
    libc.getenv(key.encode()) == value.encode() for key, value in os.environ.items())
death_signal = ctypes.c_int(0)
libc.prctl(2, ctypes.byref(death_signal))  # PR_GET_PDEATHSIG
facts["parent_death_signal"] = death_signal.value
with open("/proc/self/cgroup") as cgroup:
    facts["cgroup_is_the_jobs"] = "ddprun" in cgroup.read()
for key in sorted(os.environ):
    facts["env " + key] = os.environ[key]
for name, value in facts.items():
    print("%s: %r" % (name, value))
