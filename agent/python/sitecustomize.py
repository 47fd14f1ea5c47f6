# Written by ddprun into a run's log directory and put first on the workers' PYTHONPATH while
# hang detection (--hang_timeout) or straggler detection (--straggler_ratio) is on. With no line
# in the training script it
# - arms faulthandler, so that ddprun can have every thread's Python stack dumped (into
#   $DDPRUN_PYTHON_STACKS_DIR/python_stacks.PID.txt, on signal $DDPRUN_PYTHON_STACKS_SIGNAL)
#   before it stops a hung worker;
# - once torch is imported, counts in the worker's progress page ($DDPRUN_PROGRESS_FD, the layout
#   of ddprun/base/progress_page.h) each torch.distributed collective started and finished (the
#   c10d functions, and each DDP forward's backward, in which DDP all-reduces its buckets), the
#   time spent inside them, and each optimizer step;
# then runs the sitecustomize it shadows (the distribution's), if there is one.
#
# It never changes what the program computes, and a part that cannot work (no page, a torch
# whose hook points differ) leaves the program as it was, silently. It imports nothing heavy
# before torch is imported; the preloading interpreter (--python_preload) runs it once and calls
# _ddprun_arm again in each worker it forks.
import os as _os
import sys as _sys


def _ddprun_arm():
    """Arms the stack dump for this process, and starts its counters afresh."""
    _Progress.forget_page()
    directory = _os.environ.get("DDPRUN_PYTHON_STACKS_DIR")
    signal_number = _os.environ.get("DDPRUN_PYTHON_STACKS_SIGNAL")
    if not directory or not signal_number:
        return
    try:
        import faulthandler
        path = _os.path.join(directory, "python_stacks.%d.txt" % _os.getpid())
        stream = open(path, "w")
        faulthandler.register(int(signal_number), file=stream, all_threads=True)
        _sys._ddprun_python_stacks = stream  # faulthandler writes to it for the process's life
    except Exception:
        pass


class _Progress:
    """This process's counters in its progress page, mapped at the first count. Any thread may
    count: a lock keeps the open collectives and the time they started consistent."""

    MAGIC = 0x334750524e524444  # "DDRNRPG3", ProgressPage::kMagic
    page = None
    mapped = False  # a mapping was tried (it may have failed: then page stays None)
    lock = None
    open_collectives = 0
    open_since_ns = 0
    steps = 0
    ddp_open = False  # a DDP forward's backward is counted as open (_count_ddp_backwards)

    @classmethod
    def forget_page(cls):
        cls.page, cls.mapped, cls.open_collectives, cls.steps = None, False, 0, 0
        cls.ddp_open = False

    # The page is a memoryview of its 8-byte words (ddprun/base/progress_page.h): 0 magic,
    # 1 collectives issued, 2 completed, 3 step, 4 collective wait ns, 5 step reported ns,
    # 6 finished ns.
    # Storing one is one aligned 8-byte write, which the agent reads whole.

    @classmethod
    def _map(cls):
        cls.mapped = True
        try:
            import mmap
            import threading
            number = _os.environ.get("DDPRUN_PROGRESS_FD")
            if not number:
                return
            memory = mmap.mmap(int(number), 4096, mmap.MAP_SHARED,
                               mmap.PROT_READ | mmap.PROT_WRITE)
            page = memoryview(memory).cast("Q")
            if page[0] != cls.MAGIC:
                return
            cls.lock = threading.Lock()
            cls.page = page
        except Exception:
            cls.page = None

    @classmethod
    def mapped_page(cls):
        """The page, mapped at the first call; None when there is none."""
        if not cls.mapped:
            cls._map()
        return cls.page

    @classmethod
    def issued(cls):
        page = cls.mapped_page()
        if page is None:
            return
        with cls.lock:
            if cls.open_collectives == 0:
                cls.open_since_ns = _monotonic_ns()
            cls.open_collectives += 1
            page[1] += 1  # ISSUED

    @classmethod
    def completed(cls):
        page = cls.page
        if page is None:
            return
        with cls.lock:
            cls.open_collectives -= 1
            if cls.open_collectives == 0:
                page[4] += _monotonic_ns() - cls.open_since_ns  # WAIT_NS
            page[2] += 1  # COMPLETED

    @classmethod
    def ddp_forward(cls):
        """A DDP forward: its backward is open from now (one collective) until the next step or
        DDP forward closes it. Runs once a step, after the heavy work of the last one: what it
        costs is mostly cache misses, so it does as little as it can."""
        page = cls.mapped_page()
        if page is None:
            return
        with cls.lock:
            now = _monotonic_ns()
            if cls.ddp_open:  # the last forward's backward, not closed by a step: it ends here
                page[2] += 1  # COMPLETED
                page[4] += now - cls.open_since_ns  # WAIT_NS; the next stretch starts now
                cls.open_since_ns = now
            else:
                if cls.open_collectives == 0:
                    cls.open_since_ns = now
                cls.open_collectives += 1
                cls.ddp_open = True
            page[1] += 1  # ISSUED

    @classmethod
    def stepped(cls):
        page = cls.mapped_page()
        if page is None:
            return
        if cls.ddp_open:
            cls.ddp_open = False
            cls.completed()
        cls.steps += 1
        page[5] = _monotonic_ns()  # STEP_REPORTED_NS, before the step (the agent reads it after)
        page[3] = cls.steps  # STEP

    @classmethod
    def finished(cls, done=True):
        """This process is done with collectives (it destroyed its default group, or it is
        exiting), or, done False, in a group again: a finished process is out of ddprun's hang
        search, so a last checkpoint or the interpreter's teardown is no hang."""
        page = cls.mapped_page()
        if page is not None:
            page[6] = _monotonic_ns() if done else 0  # FINISHED_NS

    @classmethod
    def exiting(cls):
        """At exit: a process that counted anything is finished (one that never mapped its page
        has nothing to mark, and maps none now)."""
        if cls.page is not None:
            cls.finished()


class _Completions:
    """A thread of this process's own that waits for the collectives started asynchronously
    (async_op=True: a Work), in turn, and counts each one finished.

    Why not a callback on the collective's future (future.then): gloo runs those on its own
    threads, which then take the GIL; torch 1.13 destroys a gloo process group (with DDP's
    reducer, at the end of a script) holding the GIL while it joins those threads, and the two
    wait for each other for ever. Here gloo's threads never run Python."""

    pending = None  # a queue.SimpleQueue: put and get in C, no lock of Python's
    pid = 0

    @classmethod
    def watch(cls, work):
        """Counts `work` finished once its wait() returns."""
        if cls.pid != _os.getpid():  # the first here (a fork starts with no thread of ours)
            import queue
            import threading
            cls.pending, cls.pid = queue.SimpleQueue(), _os.getpid()
            threading.Thread(target=cls._run, args=(cls.pending,), name="ddprun-collectives",
                             daemon=True).start()
        cls.pending.put(work)

    @staticmethod
    def _run(pending):
        while True:
            work = pending.get()
            try:
                work.wait()  # torch releases the GIL while it waits
            except BaseException:
                pass  # failed: finished all the same; the script sees the error in its own wait
            _Progress.completed()
            del work


try:
    from time import monotonic_ns as _monotonic_ns  # CLOCK_MONOTONIC: the agent's steady_clock
except ImportError:
    _monotonic_ns = None


# The c10d functions a training script calls. Those that torch.distributed does not have (an
# older or newer torch) are skipped.
_COLLECTIVES = (
    "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_coalesced",
    "all_gather_into_tensor", "_all_gather_base", "all_gather_object", "all_to_all",
    "all_to_all_single", "barrier", "monitored_barrier", "broadcast", "broadcast_object_list",
    "gather", "gather_object", "reduce", "reduce_scatter", "reduce_scatter_tensor",
    "_reduce_scatter_base", "scatter", "scatter_object_list", "send", "recv",
)


def _count_collectives(distributed):
    import functools
    import threading
    inside = threading.local()  # a collective that calls another is counted once

    def counting(collective):
        @functools.wraps(collective)
        def counted(*args, **kwargs):
            if getattr(inside, "depth", 0):
                return collective(*args, **kwargs)
            _Progress.issued()
            inside.depth = 1
            finished_here = True
            try:
                work = collective(*args, **kwargs)
                if work is not None and hasattr(work, "wait"):  # async_op=True
                    _Completions.watch(work)
                    finished_here = False
                return work
            finally:
                inside.depth = 0
                if finished_here:
                    _Progress.completed()
        counted._ddprun_counted = True
        return counted

    for name in _COLLECTIVES:
        collective = getattr(distributed, name, None)
        if callable(collective) and not getattr(collective, "_ddprun_counted", False):
            setattr(distributed, name, counting(collective))
    _mark_group_lifetime(distributed)


def _mark_group_lifetime(distributed):
    """A process that destroys its default group is finished (_Progress.finished) until it
    forms one again."""
    import functools
    initialize = getattr(distributed, "init_process_group", None)
    destroy = getattr(distributed, "destroy_process_group", None)
    if not callable(initialize) or not callable(destroy):
        return

    @functools.wraps(initialize)
    def marked_initialize(*args, **kwargs):
        result = initialize(*args, **kwargs)
        _Progress.finished(False)
        return result

    @functools.wraps(destroy)
    def marked_destroy(group=None):
        if group is None or group is getattr(getattr(distributed, "GroupMember", None),
                                             "WORLD", None):
            _Progress.finished()
        return destroy(group)

    distributed.init_process_group = marked_initialize
    distributed.destroy_process_group = marked_destroy


def _count_ddp_backwards(ddp_module):
    """DDP all-reduces its gradient buckets in C++ during backward, out of the c10d functions'
    sight, and waits for them before the backward returns. So each DDP forward (with gradients)
    opens one collective, which the next optimizer step or DDP forward closes: the rank is
    inside it through the loss and the backward, where DDP's all-reduces run. A per-bucket
    count would take a Python communication hook, which costs a bucket more than a whole step
    of this (bench/python_hook_cost.py), and whose callbacks run on gloo's threads (see
    _Completions). DDP's all-reduce stays its own, in C++."""
    import functools
    import torch
    ddp = getattr(ddp_module, "DistributedDataParallel", None)
    if ddp is None:
        return
    forward = ddp.forward

    @functools.wraps(forward)
    def counted_forward(self, *inputs, **kwargs):
        if not getattr(self, "_ddprun_uncounted", False) and torch.is_grad_enabled():
            _Progress.ddp_forward()
        return forward(self, *inputs, **kwargs)

    ddp.forward = counted_forward


def _count_optimizer_steps(optim):
    optimizer = getattr(optim, "Optimizer", None)
    if optimizer is None:
        return
    # torch 2.x: one hook for every optimizer (torch 1.13 deletes the submodule's name from
    # torch.optim, hence sys.modules).
    register = getattr(_sys.modules.get("torch.optim.optimizer"),
                       "register_optimizer_step_post_hook", None)
    if register is not None:
        register(lambda *_: _Progress.stepped())
        return
    # torch 1.x: each optimizer class's step is wrapped when its first instance is made.
    import functools
    initialize = optimizer.__init__

    def count_steps_of(cls):
        step = cls.step
        if getattr(step, "_ddprun_counted", False):
            return  # wrapped already, here or in a base class it inherits step from

        @functools.wraps(step)
        def counted_step(self, *args, **kwargs):
            result = step(self, *args, **kwargs)
            _Progress.stepped()
            return result
        counted_step._ddprun_counted = True
        cls.step = counted_step

    @functools.wraps(initialize)
    def counting_init(self, *args, **kwargs):
        initialize(self, *args, **kwargs)
        try:
            count_steps_of(type(self))
        except Exception:
            pass
    optimizer.__init__ = counting_init


# What to patch in which module, the moment that module's import has run.
_PATCHES = {
    "torch.distributed": _count_collectives,
    "torch.nn.parallel.distributed": _count_ddp_backwards,
    "torch.optim": _count_optimizer_steps,
}


class _AfterImport:
    """A finder first on sys.meta_path that finds nothing itself: for a module in _PATCHES it
    asks the others, and lets the module's loader run before the patch does. The module keeps
    its own loader."""

    def find_spec(self, name, path=None, target=None):
        if name not in _PATCHES:
            return None
        for finder in _sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        execute = getattr(loader, "exec_module", None)
        if execute is None:
            return spec

        def exec_module(module):
            execute(module)
            patch = _PATCHES.pop(name, None)
            if patch is not None:
                try:
                    patch(module)
                except Exception:
                    pass
        try:
            loader.exec_module = exec_module  # this module's loader only: a fresh one per spec
        except Exception:
            pass
        return spec


def _watch_imports():
    if _monotonic_ns is None:
        return
    already = [name for name in _PATCHES if name in _sys.modules]
    for name in already:  # imported before this file ran (not the usual case)
        try:
            _PATCHES.pop(name)(_sys.modules[name])
        except Exception:
            pass
    _sys.meta_path.insert(0, _AfterImport())
    import atexit
    atexit.register(_Progress.exiting)  # the last atexit function to run: registered first


def _ddprun_run_shadowed():
    try:
        import importlib.machinery
        import importlib.util
        here = _os.path.dirname(_os.path.abspath(__file__))
        path = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:
        pass


_ddprun_arm()
_watch_imports()
_ddprun_run_shadowed()
