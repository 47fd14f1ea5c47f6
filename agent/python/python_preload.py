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
#   from the agent:      start AGENT_PID TERMINAL DEBUGGABLE INHERITED_FD WORKING_DIR ARGC ARGV...
#                        ENV... with the descriptors stdin, stdout, stderr [, inherited] attached
#   to the agent:        started PID | failed-setup PID STEP ERRNO | refused REASON
#
# A worker is forked twice (the middle process exits at once), so that its parent is the agent,
# which is a child subreaper: it reaps the worker as it reaps any other. The worker waits for its
# middle process to be gone before it takes the agent's parent-death signal, sets itself up as
# ddprun's exec path does (worker_process.cc), reports, and only then becomes the program: its
# argv, __main__, environment, working directory and standard streams. End of file on the socket
# (the agent is gone or done) ends this interpreter.
import ctypes  # the workers' prctl calls: imported here, once, rather than in every worker
import fcntl
import os
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
        argc = int(fields[6])
        self.argv = fields[7:7 + argc]
        self.env = dict(entry.split("=", 1) for entry in fields[7 + argc:] if "=" in entry)
        self.stdin_fd, self.stdout_fd, self.stderr_fd = fds[0], fds[1], fds[2]
        self.received_inherited_fd = fds[3] if len(fds) > 3 else -1
        self.fds = fds


def _prctl(libc, option, argument):
    if libc.prctl(option, ctypes.c_ulong(argument), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


_PR_SET_PDEATHSIG = 1
_PR_SET_PTRACER = 0x59616D61
_SIGKILL = 9
# The steps a failed setup reports; worker_process.cc's ChildStep.
_STEP_SET_UP = 0
_STEP_CHANGE_DIRECTORY = 2


def _sys_path0(kind, program):
    """sys.path[0] as `python3 PROGRAM` or `python3 -m PROGRAM` sets it (Python 3.x on POSIX)."""
    if kind == "module":
        return os.getcwd()
    return os.path.dirname(os.path.realpath(program))


def _thread_count():
    return len(os.listdir("/proc/self/task"))


def _preload(modules):
    """Imports `modules`; the reason the interpreter cannot fork workers, or None."""
    import importlib
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as error:  # an import may raise anything, SystemExit included
            return "importing %s failed: %s: %s" % (name, type(error).__name__, error)
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
    import array
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(_MAX_DATAGRAM, socket.CMSG_SPACE(_MAX_FDS * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _send(control, *fields):
    control.send("\0".join(str(field) for field in fields).encode("utf-8", "surrogateescape"))


def _read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _fork_worker(control, start):
    """Starts one worker. In the worker returns `start`; in this interpreter returns None, once
    the agent has the answer."""
    go_read, go_write = os.pipe()          # the worker waits on it for its middle process's end
    report_read, report_write = os.pipe()  # the middle process's pid line, then the worker's setup
    try:
        middle = os.fork()
        if middle == 0:
            _fork_from_middle(control, start, go_read, go_write, report_read, report_write)
            return start  # in the worker
        os.close(go_read)
        os.close(report_write)
        go_read = report_write = -1
        os.waitpid(middle, 0)
        # The middle process is reaped: the worker is the agent's child now.
        try:
            os.write(go_write, b"g")
        except BrokenPipeError:
            pass  # no worker: the middle process could not fork
        os.close(go_write)
        go_write = -1
        lines = _read_all(report_read).decode().split("\n")
    finally:
        for fd in (go_read, go_write, report_read, report_write):
            if fd >= 0 and os.getpid() == _SERVER_PID:
                os.close(fd)
    if not lines[0]:
        _send(control, "refused", "the fork of a worker failed")
    elif len(lines) > 1 and lines[1].startswith("failed"):
        _, step, error = lines[1].split()
        _send(control, "failed-setup", lines[0], step, error)
    else:
        _send(control, "started", lines[0])
    return None


def _fork_from_middle(control, start, go_read, go_write, report_read, report_write):
    """In the middle process: forks the worker and exits; returns only in the worker."""
    try:
        os.close(go_write)
        os.close(report_read)
        worker = os.fork()
        if worker == 0:
            os.close(control.detach())
            _become_worker(start, go_read, report_write)
            return
        os.write(report_write, b"%d\n" % worker)
    except BaseException:
        pass
    os._exit(0)


def _become_worker(start, go_read, report):
    """In the worker, before the program: the process setup of worker_process.cc's ExecChild.
    Reports "ok", or the failed step and errno and exits 127."""
    step = _STEP_SET_UP
    try:
        os.read(go_read, 1)
        os.close(go_read)
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
    except BaseException as error:  # anything: the worker must not run on half set up
        os.write(report, b"failed %d %d\n" % (step, getattr(error, "errno", None) or 0))
        os._exit(127)
    os.write(report, b"ok\n")
    os.close(report)


def _serve(control):
    """Forks a worker for each start until the agent closes the socket; returns the start in the
    worker, None here at the end."""
    while True:
        data, fds = _receive(control)
        if not data:
            return None
        fields = data.decode("utf-8", "surrogateescape").split("\0")
        try:
            if fields[0] != "start" or len(fds) < 3:
                _send(control, "refused", "a malformed start request")
                continue
            start = _Start(fields, fds)
            # Buffered output would be written again by every worker.
            sys.stdout.flush()
            sys.stderr.flush()
            if _fork_worker(control, start) is not None:
                return start
        except OSError as error:
            _send(control, "refused", "forking a worker: %s" % error)
        finally:
            if os.getpid() == _SERVER_PID:
                for fd in fds:
                    os.close(fd)


def _set_command_line(argv):
    """Shows the worker's command line in /proc/PID/cmdline (ps, top) where this interpreter's
    was: written over it, as far as it is long."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end: fields 48 and 49
        text = b"\0".join(arg.encode("utf-8", "surrogateescape") for arg in argv)[:end - start - 1]
        ctypes.memmove(start, text.ljust(end - start, b"\0"), end - start)
    except (OSError, ValueError, IndexError):
        pass


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
    _set_command_line(start.argv)
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
