# ddprun's preloading interpreter (--python_preload): started once per node with the workers'
# interpreter, options and environment, it imports the modules named on its command line, then
# forks every worker of every attempt, so that a restart costs a fork, not an interpreter start
# and an `import torch`. ddprun passes this file with -c; its command line is
#
#   python3 [the workers' interpreter options] -c THIS CONTROL_FD PROGRAM_KIND PROGRAM MODULE...
#
# CONTROL_FD: a SOCK_SEQPACKET socket to the agent. PROGRAM_KIND is "script" or "module";
# PROGRAM the script's path or the module's name, from which sys.path[0] is set as the
# interpreter would set it for the workers (the modules are then found where theirs would be).
#
# The protocol, one datagram each, fields separated by NUL:
#   to the agent, once:  ready | failed REASON
#   from the agent:      start AGENT_PID TERMINAL DEBUGGABLE INHERITED_FD WORKING_DIR CPUS
#                        MEMORY_NODE ARGC ARGV... ENV... with the descriptors stdin, stdout,
#                        stderr [, inherited] attached; CPUS "0-3,8" and MEMORY_NODE its
#                        --numa_binding ("" and -1: none)
#   to the agent:        started PID | failed-setup PID STEP ERRNO | refused REASON
#
# A worker's parent is the agent, which reaps it as it reaps any other: it is forked as this
# interpreter's sibling (_SiblingFork), or, where that cannot be done, forked twice, its middle
# process exiting at once (the agent is a child subreaper; the worker waits for the middle process
# to be gone). It takes the agent's parent-death signal, sets itself up as ddprun's exec path
# does (worker_process.cc), reports, and only then becomes the program: its argv, __main__,
# environment, working directory and standard streams. End of file on the socket (the agent is
# gone or done) ends this interpreter.
import collections
import ctypes  # the workers' prctl calls: imported here, once, rather than in every worker
import errno
import fcntl
import os
import select
import socket
import sys
import termios

_MAX_DATAGRAM = 4 << 20
_MAX_FDS = 4


class _Start:
    """One worker to start, as the agent described it."""

    def __init__(self, fields, fds):
        self.agent_pid = int(fields[1])
        self.terminal = fields[2] == "1"
        self.debuggable = fields[3] == "1"
        self.inherited_fd = int(fields[4])
        self.working_dir = fields[5]
        self.cpus = _cpu_list(fields[6])
        self.memory_node = int(fields[7])
        argc = int(fields[8])
        self.argv = fields[9:9 + argc]
        self.env = dict(entry.split("=", 1) for entry in fields[9 + argc:] if "=" in entry)
        self.stdin_fd, self.stdout_fd, self.stderr_fd = fds[0], fds[1], fds[2]
        self.received_inherited_fd = fds[3] if len(fds) > 3 else -1
        self.fds = fds


def _cpu_list(text):
    """sysfs's "0-3,8" as a set of CPU ids."""
    cpus = set()
    for item in filter(None, text.split(",")):
        first, _, last = item.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


# set_mempolicy's number (glibc has no wrapper); where it is not known here, no memory policy.
_SYS_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237}.get(os.uname().machine)
_MPOL_PREFERRED = 1


def _bind(libc, cpus, memory_node):
    """worker_process.cc's binding: the CPUs, and the memory node preferred."""
    os.sched_setaffinity(0, cpus)
    if _SYS_SET_MEMPOLICY is None or memory_node < 0:
        return
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    mask = (ctypes.c_ulong * (memory_node // bits + 1))()
    mask[memory_node // bits] = 1 << (memory_node % bits)
    if libc.syscall(ctypes.c_long(_SYS_SET_MEMPOLICY), ctypes.c_long(_MPOL_PREFERRED), mask,
                    ctypes.c_ulong(len(mask) * bits + 1)) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _prctl(libc, option, argument):
    zero = ctypes.c_ulong(0)
    if libc.prctl(option, ctypes.c_ulong(argument), zero, zero, zero) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


_PR_SET_PDEATHSIG = 1
_PR_SET_PTRACER = 0x59616D61
_SIGKILL = 9
# The steps a failed setup reports; worker_process.cc's ChildStep.
_STEP_SET_UP = 0
_STEP_CHANGE_DIRECTORY = 2
_STEP_BIND = 3


def _sys_path0(kind, program):
    """sys.path[0] as `python3 PROGRAM` or `python3 -m PROGRAM` sets it (Python 3.x on POSIX)."""
    if kind == "module":
        return os.getcwd()
    return os.path.dirname(os.path.realpath(program))


def _thread_count():
    return len(os.listdir("/proc/self/task"))


# What a DDP script's first steps import lazily, by preloaded module: torch 2.x's
# DistributedDataParallel imports torch.distributed.tensor, dynamo and inductor's config when it
# is built (2.2 s and 900 modules in torch 2.15, paid by every forked worker of every attempt
# otherwise), init_process_group the functional collectives. Imported where the torch has them
# (1.13 has none), a missing one skipped.
_WARM_WITH = {
    "torch": ("torch._dynamo", "torch.distributed.tensor.parallel.ddp",
              "torch.distributed._functional_collectives", "torch._inductor.config"),
}


def _preload(modules):
    """Imports `modules`, and what their first use imports (_WARM_WITH); the reason the
    interpreter cannot fork workers, or None."""
    import importlib
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as error:  # an import may raise anything, SystemExit included
            return "importing %s failed: %s: %s" % (name, type(error).__name__, error)
    for name in modules:
        for lazy in _WARM_WITH.get(name, ()):
            try:
                importlib.import_module(lazy)
            except ImportError:
                pass
    import threading
    if threading.active_count() > 1:
        return ("importing %s started %d Python thread(s), which a fork would not copy"
                % (",".join(modules), threading.active_count() - 1))
    # A library's own threads may end before a fork and start again after it (OpenBLAS's, which
    # numpy starts, do: pthread_atfork): those that still run after a first fork would be lost.
    if _thread_count() > 1:
        trial = os.fork()
        if trial == 0:
            os._exit(0)
        os.waitpid(trial, 0)
        if _thread_count() > 1:
            return ("importing %s started %d thread(s) that a fork would not copy"
                    % (",".join(modules), _thread_count() - 1))
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and hasattr(cuda, "is_initialized") and cuda.is_initialized():
        return "importing %s initialized CUDA, which a fork cannot share" % ",".join(modules)
    return None


def _receive(control):
    """One datagram from the agent and the descriptors it carries; b"" at the end."""
    import array
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(_MAX_DATAGRAM,
                                            socket.CMSG_SPACE(_MAX_FDS * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _send(control, *fields):
    """One answer to the agent: the fields, separated by NUL."""
    control.send("\0".join(str(field) for field in fields).encode("utf-8", "surrogateescape"))


class _Pending:
    """A worker asked for, whose answer is not yet sent: the agent gets answers in the order of
    its requests, each once the worker has reported its setup (or could not be forked)."""

    def __init__(self, middle=-1, report=-1, text=b"", answer=None):
        self.middle = middle  # the middle process, if any: reaped once the report ends
        self.report = report  # the worker's pid line, then its setup line; EOF: done
        self.text = text
        self.answer = answer  # the fields to send, once known

    def forked(self):
        """Whether the worker exists (its pid is known), or never will."""
        return self.answer is not None or b"\n" in self.text

    def read(self):
        """Reads what the report has; at its end, reaps the middle process and decides."""
        chunk = os.read(self.report, 4096)
        if chunk:
            self.text += chunk
            return
        os.close(self.report)
        if self.middle > 0:
            os.waitpid(self.middle, 0)
        lines = self.text.decode().split("\n")
        if not lines[0]:
            self.answer = ("refused", "the fork of a worker failed")
        elif len(lines) > 1 and lines[1].startswith("failed"):
            _, step, error = lines[1].split()
            self.answer = ("failed-setup", lines[0], step, error)
        else:
            self.answer = ("started", lines[0])


class _SiblingFork:
    """A fork whose child is this interpreter's sibling: clone3 with CLONE_PARENT, so that the
    agent is the worker's parent without a middle process (whose fork and exit would cost two
    copies of the page tables). Around it what os.fork does for Python (PyOS_BeforeFork, then
    AfterFork_Child or _Parent: the import lock, os.register_at_fork's hooks, the thread state)
    and, in the child, what glibc's fork does for the C library in a single-threaded process:
    its thread's cached tid written by the kernel (CLONE_CHILD_SETTID at the address glibc
    publishes for debuggers, _thread_db_pthread_tid) and its robust futex list registered.
    The C libraries' own pthread_atfork handlers do not run: used only while this interpreter
    has one thread, when they have nothing to hand over."""

    _CLONE_PARENT = 0x00008000
    _CLONE_CHILD_SETTID = 0x01000000
    _SYS_CLONE3 = 435
    _SYS_SET_ROBUST_LIST = {"x86_64": 273, "aarch64": 99}
    _SYS_GET_ROBUST_LIST = {"x86_64": 274, "aarch64": 100}

    class _CloneArgs(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in (
            "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack", "stack_size",
            "tls")]

    def __init__(self):
        """Raises OSError (or a ctypes error) where the kernel or the C library lacks a part."""
        import platform
        import threading
        machine = platform.machine()
        # The GIL stays held across the call, as os.fork holds it across fork().
        self._libc = ctypes.PyDLL(None, use_errno=True)
        self._libc.syscall.restype = ctypes.c_long
        self._libc.pthread_self.restype = ctypes.c_void_p
        tid_offset = (ctypes.c_uint32 * 3).in_dll(self._libc, "_thread_db_pthread_tid")[2]
        tid_address = self._libc.pthread_self() + tid_offset
        if ctypes.c_int.from_address(tid_address).value != threading.get_native_id():
            raise OSError("glibc's thread descriptor is not as _thread_db_pthread_tid says")
        head, length = ctypes.c_void_p(), ctypes.c_size_t()
        # Every argument as a long: syscall() is variadic, and a plain int would leave the upper
        # half of its register undefined.
        if self._libc.syscall(ctypes.c_long(self._SYS_GET_ROBUST_LIST[machine]), ctypes.c_long(0),
                              ctypes.byref(head), ctypes.byref(length)) != 0:
            raise OSError(ctypes.get_errno(), "get_robust_list")
        self._robust_list = (head, length)
        self._set_robust_list = ctypes.c_long(self._SYS_SET_ROBUST_LIST[machine])
        # No exit signal of its own: with CLONE_PARENT the child takes this process's (SIGCHLD,
        # to the agent), and clone3 refuses another.
        self._args = self._CloneArgs(flags=self._CLONE_PARENT | self._CLONE_CHILD_SETTID,
                                     child_tid=tid_address)

    def fork(self):
        """0 in the child, the child's pid here; OSError when the kernel refuses."""
        api = ctypes.pythonapi
        api.PyOS_BeforeFork()
        pid = self._libc.syscall(ctypes.c_long(self._SYS_CLONE3), ctypes.byref(self._args),
                                 ctypes.c_long(ctypes.sizeof(self._args)))
        error = ctypes.get_errno()
        if pid == 0:
            self._libc.syscall(self._set_robust_list, self._robust_list[0],
                               ctypes.c_long(self._robust_list[1].value))
            api.PyOS_AfterFork_Child()
            return 0
        api.PyOS_AfterFork_Parent()
        if pid < 0:
            raise OSError(error, os.strerror(error))
        return pid


def _sibling_fork():
    """The _SiblingFork of this interpreter, or None where one cannot be made (then workers are
    forked twice)."""
    try:
        return _SiblingFork()
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def _fork_worker(control, start, pending, sibling):
    """Starts forking one worker. In the worker returns `start`; here, its _Pending."""
    report_read, report_write = os.pipe()
    direct = sibling is not None and _thread_count() == 1
    try:
        child = sibling.fork() if direct else os.fork()
    except OSError as error:
        os.close(report_read)
        os.close(report_write)
        if direct and error.errno in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
            # A kernel, or a seccomp filter, without clone3 or CLONE_PARENT: fork twice.
            return _fork_worker(control, start, pending, None)
        return _Pending(answer=("refused", "forking a worker: %s" % error))
    if child == 0:
        os.close(report_read)
        for other in pending:  # the other workers' reports are not this one's to hold
            if other.answer is None:
                os.close(other.report)
        if direct:
            os.close(control.detach())
            _become_worker(start, report_write)
        else:
            _fork_from_middle(control, start, report_write)
        return start  # in the worker
    os.close(report_write)
    if direct:
        return _Pending(report=report_read, text=b"%d\n" % child)
    return _Pending(middle=child, report=report_read)


def _fork_from_middle(control, start, report):
    """In the middle process: forks the worker and exits; returns only in the worker, once the
    middle process is gone and the worker is the agent's child."""
    try:
        middle_exit = os.pidfd_open(os.getpid())  # readable once this process has exited
        worker = os.fork()
        if worker == 0:
            os.close(control.detach())
            select.select([middle_exit], [], [])
            os.close(middle_exit)
            _become_worker(start, report)
            return
        os.write(report, b"%d\n" % worker)
    except BaseException:
        pass
    os._exit(0)


def _become_worker(start, report):
    """In the worker, before the program: the process setup of worker_process.cc's ExecChild.
    Reports "ok", or the failed step and errno and exits 127."""
    step = _STEP_SET_UP
    try:
        libc = _LIBC
        if start.terminal:
            os.setsid()
            fcntl.ioctl(start.stdout_fd, termios.TIOCSCTTY, 0)
        else:
            os.setpgid(0, 0)
        _prctl(libc, _PR_SET_PDEATHSIG, _SIGKILL)
        if os.getppid() != start.agent_pid:  # the agent died before the signal was armed
            os._exit(127)
        for target, fd in enumerate((start.stdin_fd, start.stdout_fd, start.stderr_fd)):
            os.dup2(fd, target)
        if start.inherited_fd >= 0:
            os.dup2(start.received_inherited_fd, start.inherited_fd)
        for fd in start.fds:
            if fd > 2 and fd != start.inherited_fd:
                os.close(fd)
        if start.debuggable:
            try:
                _prctl(libc, _PR_SET_PTRACER, start.agent_pid)
            except OSError:
                pass  # EINVAL where Yama is not: nothing to do
        if start.working_dir:
            step = _STEP_CHANGE_DIRECTORY
            os.chdir(start.working_dir)
        if start.cpus:
            step = _STEP_BIND
            _bind(libc, start.cpus, start.memory_node)
    except BaseException as error:  # anything: the worker must not run on half set up
        os.write(report, b"failed %d %d\n" % (step, getattr(error, "errno", None) or 0))
        os._exit(127)
    os.write(report, b"ok\n")
    os.close(report)


def _serve(control):
    """Forks a worker for each start, the next one while the last sets itself up, until the agent
    closes the socket; returns the start in the worker, None here at the end."""
    pending = collections.deque()
    sibling = _sibling_fork()
    while True:
        waiting = [entry.report for entry in pending if entry.answer is None]
        # The next worker is forked once the last one exists: each starts a little before the
        # next, in the agent's order (local rank 0 first, which is where torch's store listens),
        # while their middle processes' exits and their setups overlap.
        listening = [control] if all(entry.forked() for entry in pending) else []
        readable, _, _ = select.select(listening + waiting, [], [])
        for entry in pending:
            if entry.answer is None and entry.report in readable:
                entry.read()
        while pending and pending[0].answer is not None:
            _send(control, *pending.popleft().answer)
        if control not in readable:
            continue
        data, fds = _receive(control)
        if not data:
            return None
        fields = data.decode("utf-8", "surrogateescape").split("\0")
        try:
            if fields[0] != "start" or len(fds) < 3:
                pending.append(_Pending(answer=("refused", "a malformed start request")))
                continue
            start = _Start(fields, fds)
            # Buffered output would be written again by every worker.
            sys.stdout.flush()
            sys.stderr.flush()
            forked = _fork_worker(control, start, pending, sibling)
            if forked is start:
                return start
            pending.append(forked)
        finally:
            if os.getpid() == _SERVER_PID:
                for fd in fds:
                    os.close(fd)
        while pending and pending[0].answer is not None:
            _send(control, *pending.popleft().answer)


def _proc_area(start_field):
    """(start, end) of one of this process's areas, as fields start_field and start_field + 1 of
    /proc/self/stat give them; None where they cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # the fields from the third on
        return int(fields[start_field - 3]), int(fields[start_field - 2])
    except (OSError, ValueError, IndexError):
        return None


def _show_in_proc(start):
    """Shows the worker's command line and environment in /proc/PID/cmdline and environ (ps,
    top, py-spy, monitors that find a rank's process by its RANK) where this interpreter's
    were, which is what the kernel shows of a process: written over them, padded with NULs.
    The command line is cut where this interpreter's ends (it holds this file, so it is long).
    The environment takes as many whole entries as fit with a NUL to spare, which ends the list
    for readers (psutil stops at an empty entry); its area has room for the worker's (ddprun's
    kEnvironRoomBytes), and one that still does not fit is said on stderr. Called once
    os.environ is the worker's: libc's environ then points at copies, not into the area, so
    getenv() stays right."""
    encoded = [arg.encode("utf-8", "surrogateescape") + b"\0" for arg in start.argv]
    area = _proc_area(48)  # arg_start, arg_end
    if area is not None:
        size = area[1] - area[0]
        ctypes.memmove(area[0], b"".join(encoded)[:size - 1].ljust(size, b"\0"), size)
    entries = ["%s=%s" % item for item in start.env.items()]
    area = _proc_area(50)  # env_start, env_end
    if area is None:
        return
    size, text, shown = area[1] - area[0], b"", 0
    for entry in entries:
        entry = entry.encode("utf-8", "surrogateescape") + b"\0"
        if len(text) + len(entry) > size - 1:
            break
        text, shown = text + entry, shown + 1
    ctypes.memmove(area[0], text.ljust(size, b"\0"), size)
    if shown < len(entries):
        sys.stderr.write("ddprun: /proc/%d/environ shows %d of the worker's %d variables: the "
                         "room ddprun made in its environment is too small\n"
                         % (os.getpid(), shown, len(entries)))


def _become_program(start, kind, program):
    """Gives the worker the program's argv, environment and streams, then runs it as
    `python3 PROGRAM` or `python3 -m PROGRAM` would, in the real __main__ (whose namespace, this
    file's, is emptied first: from then on only local names are used), and ends the worker."""
    import builtins
    import importlib.machinery
    import runpy
    os.environ.clear()
    os.environ.update(start.env)
    sys.orig_argv = list(start.argv)
    _show_in_proc(start)
    # Line buffering follows what the streams are now, as at an interpreter's start: a terminal,
    # and stderr always, unless -u made them unbuffered.
    for stream in (sys.stdout, sys.stderr):
        if not stream.write_through:
            stream.reconfigure(line_buffering=stream is sys.stderr or os.isatty(stream.fileno()))
    # Fresh processes draw fresh seeds: `random` reseeds itself at a fork, numpy's does not.
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    hook = sys.modules.get("sitecustomize")
    if hook is not None and hasattr(hook, "_ddprun_arm"):
        hook._ddprun_arm()  # ddprun's stack hook, for this worker's pid
    sys.path[0] = _sys_path0(kind, program)
    # What follows `-m MODULE`, or the script.
    arguments = (start.argv[start.argv.index("-m") + 2:] if kind == "module"
                 else start.argv[start.argv.index(program) + 1:])
    interpreter = sys.executable
    system, operating_system = sys, os
    finish, exit_status = _finish, _exit_status
    main = sys.modules["__main__"]
    main.__dict__.clear()
    main.__dict__.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None,
                         __builtins__=builtins)
    try:
        if kind == "module":
            system.argv = ["-m"] + arguments
            runpy._run_module_as_main(program, alter_argv=True)
        else:
            system.argv = [program] + arguments
            # __file__, absolute since Python 3.9 but not normalized (a ".." stays).
            path = operating_system.path.join(operating_system.getcwd(), program)
            try:
                with open(path, "rb") as source_file:
                    source = source_file.read()
            except OSError as error:
                system.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (
                    interpreter, path, error.errno, error.strerror))
                finish(2)
            main.__dict__.update(__file__=path, __cached__=None, __loader__=(
                importlib.machinery.SourceFileLoader("__main__", path)))
            exec(compile(source, path, "exec"), main.__dict__)
    except SystemExit as error:
        finish(exit_status(error))
    except BaseException as error:
        # The traceback a fresh interpreter prints: from the program's first frame.
        error.__traceback__ = error.__traceback__.tb_next
        system.excepthook(type(error), error, error.__traceback__)
        finish(1, killed_by_interrupt=isinstance(error, KeyboardInterrupt))
    finish(0)


# _exit_status and _finish run once __main__'s namespace, their globals, is the program's: they
# use only names they import themselves.
def _exit_status(error):
    """The status an interpreter exits with for an uncaught SystemExit, as CPython decides it."""
    import sys
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code & 0xFF
    sys.stderr.write("%s\n" % error.code)
    return 1


def _finish(status, killed_by_interrupt=False):
    """Ends the worker as an interpreter's finalization does up to its teardown: non-daemon
    threads joined, atexit functions run, the standard streams flushed (status 120 if stdout
    cannot be). The teardown itself (freeing every object, running the finalizers of those still
    alive, which Python does not promise) is left out: in a fork it would write to nearly every
    page it shares with the preloading interpreter, and copy them, for a second or more with
    torch. An uncaught KeyboardInterrupt ends it by SIGINT, as CPython does."""
    import atexit
    import os
    import signal
    import sys
    import threading
    try:
        threading._shutdown()
    except BaseException:
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            if stream is sys.stdout:
                status = 120
    if killed_by_interrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


def _main():
    """The preloading interpreter's life; returns only in a worker, with what it is to run."""
    # The room ddprun made in this process's environment area for the workers' (_show_in_proc):
    # no module imported here, and no worker, is to see it.
    os.environ.pop("DDPRUN_ENVIRON_ROOM", None)
    control = socket.socket(fileno=int(sys.argv[1]))
    kind, program = sys.argv[2], sys.argv[3]
    sys.path[0] = _sys_path0(kind, program)
    reason = _preload(sys.argv[4:])
    if reason:
        _send(control, "failed", reason)
        _end_server()
    # What was imported stays out of the collector's passes: they would touch, and so copy, the
    # pages the workers share.
    import gc
    gc.freeze()
    _send(control, "ready")
    start = _serve(control)
    if start is None:
        _end_server()
    return start, kind, program


def _end_server():
    """Ends this interpreter without its teardown, which takes a second with torch loaded and
    frees nothing the exit does not."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


_SERVER_PID = os.getpid()
_LIBC = ctypes.CDLL(None, use_errno=True)
_become_program(*_main())
