# Written by ddprun into a run's log directory and put first on the workers' PYTHONPATH while
# hang detection (--hang_timeout) or straggler detection (--straggler_ratio) is on. With no line
# in the training script it
# - arms faulthandler, so that ddprun can have every thread's Python stack dumped (into
#   $DDPRUN_PYTHON_STACKS_DIR/python_stacks.PID.txt, on signal $DDPRUN_PYTHON_STACKS_SIGNAL)
#   before it stops a hung worker;
# - once torch is imported, counts in the worker's progress page ($DDPRUN_PROGRESS_FD, the layout
#   of ddprun/base/progress_page.h) each torch.distributed collective started and finished (the
#   c10d functions, and the buckets DDP all-reduces, through a communication hook), the time spent
#   inside them, and each optimizer step;
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

    MAGIC = 0x324750524e524444  # "DDRNRPG2", ProgressPage::kMagic
    page = None
    mapped = False  # a mapping was tried (it may have failed: then page stays None)
    lock = None
    open_collectives = 0
    open_since_ns = 0
    steps = 0

    @classmethod
    def forget_page(cls):
        cls.page, cls.mapped, cls.open_collectives, cls.steps = None, False, 0, 0

    @classmethod
    def _map(cls):
        cls.mapped = True
        try:
            import ctypes
            import mmap
            import threading
            number = _os.environ.get("DDPRUN_PROGRESS_FD")
            if not number:
                return
            memory = mmap.mmap(int(number), 4096, mmap.MAP_SHARED,
                               mmap.PROT_READ | mmap.PROT_WRITE)

            class Page(ctypes.Structure):
                _fields_ = [("magic", ctypes.c_uint64),
                            ("collectives_issued", ctypes.c_uint64),
                            ("collectives_completed", ctypes.c_uint64),
                            ("step", ctypes.c_int64),
                            ("collective_wait_ns", ctypes.c_uint64),
                            ("step_reported_ns", ctypes.c_uint64)]

            page = Page.from_buffer(memory)
            if page.magic != cls.MAGIC:
                return
            cls.lock = threading.Lock()
            cls.page = page
        except Exception:
            cls.page = None

    @classmethod
    def issued(cls):
        if not cls.mapped:
            cls._map()
        page = cls.page
        if page is None:
            return
        with cls.lock:
            if cls.open_collectives == 0:
                cls.open_since_ns = _monotonic_ns()
            cls.open_collectives += 1
            page.collectives_issued += 1

    @classmethod
    def completed(cls):
        page = cls.page
        if page is None:
            return
        with cls.lock:
            cls.open_collectives -= 1
            if cls.open_collectives == 0:
                page.collective_wait_ns += _monotonic_ns() - cls.open_since_ns
            page.collectives_completed += 1

    @classmethod
    def stepped(cls):
        if not cls.mapped:
            cls._map()
        page = cls.page
        if page is None:
            return
        cls.steps += 1
        page.step_reported_ns = _monotonic_ns()
        page.step = cls.steps


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
                if work is not None and hasattr(work, "get_future"):  # async_op=True
                    try:
                        work.get_future().then(lambda _: _Progress.completed())
                        finished_here = False
                    except Exception:
                        pass  # no future for this backend: counted as finished now
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


def _count_ddp_buckets(ddp_module):
    """DDP all-reduces its gradient buckets in C++, out of the c10d functions' sight: its
    communication hook is the point where each bucket passes. A script's own hook is wrapped to
    be counted; a DDP without one gets, before its first forward, the hook that does what DDP's
    built-in all-reduce does (divide by the group's size, then sum)."""
    import functools
    ddp = getattr(ddp_module, "DistributedDataParallel", None)
    if ddp is None or not hasattr(ddp, "register_comm_hook"):
        return
    import torch.distributed as distributed
    all_reduce = getattr(distributed.all_reduce, "__wrapped__", distributed.all_reduce)
    register, register_builtin, forward = (ddp.register_comm_hook,
                                           getattr(ddp, "_register_builtin_comm_hook", None),
                                           ddp.forward)

    def counted_future(future):
        def finished(done):
            try:
                return done.value()[0] if isinstance(done.value(), list) else done.value()
            finally:
                _Progress.completed()
        return future.then(finished)

    def allreduce_hook(process_group, bucket):
        group = process_group if process_group is not None else distributed.group.WORLD
        tensor = bucket.buffer().div_(group.size())
        _Progress.issued()
        try:
            future = all_reduce(tensor, group=group, async_op=True).get_future()
        except BaseException:
            _Progress.completed()
            raise
        return counted_future(future)

    def wrap_hook(hook):
        @functools.wraps(hook)
        def counted_hook(state, bucket):
            _Progress.issued()
            try:
                future = hook(state, bucket)
            except BaseException:
                _Progress.completed()
                raise
            return counted_future(future)
        return counted_hook

    @functools.wraps(register)
    def register_comm_hook(self, state, hook):
        self._ddprun_comm_hook = True
        return register(self, state, wrap_hook(hook))

    def register_builtin_comm_hook(self, comm_hook_type):
        self._ddprun_comm_hook = True  # C++ all the way: its buckets are not counted
        return register_builtin(self, comm_hook_type)

    @functools.wraps(forward)
    def counted_forward(self, *inputs, **kwargs):
        if not getattr(self, "_ddprun_comm_hook", False):
            self._ddprun_comm_hook = True
            try:
                register(self, self.process_group, allreduce_hook)
            except Exception:
                pass  # this torch refuses it: DDP's own all-reduce runs, uncounted
        return forward(self, *inputs, **kwargs)

    ddp.register_comm_hook = register_comm_hook
    if register_builtin is not None:
        ddp._register_builtin_comm_hook = functools.wraps(register_builtin)(
            register_builtin_comm_hook)
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
    "torch.nn.parallel.distributed": _count_ddp_buckets,
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
