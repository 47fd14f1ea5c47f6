# Written by ddprun into a run's log directory and put first on the workers' PYTHONPATH while
# hang detection (--hang_timeout) or straggler detection (--straggler_ratio) is on. With no line
# in the training script it
# - arms faulthandler, so that ddprun can have every thread's Python stack dumped (into
#   $DDPRUN_PYTHON_STACKS_DIR/python_stacks.PID.txt, on signal $DDPRUN_PYTHON_STACKS_SIGNAL)
#   before it stops a hung worker;
# - once torch is imported, counts in the worker's progress page ($DDPRUN_PROGRESS_FD, the layout
#   of ddprun/base/progress_page.h) each torch.distributed collective started and finished (the
#   c10d functions, and each gradient bucket DDP all-reduces through its process group), the
#   time spent inside them, and each optimizer step;
# then runs the sitecustomize it shadows (the distribution's), if there is one.
#
# It never changes what the program computes, and a part that cannot work leaves the program as
# it was: without a page, silently; where the installed torch lacks a hook point (a release that
# moved one), with one line on stderr naming what cannot be watched (_Unwatched). Which hook
# points it uses, and the torch releases they were tested on, _PATCHES says. It imports nothing
# heavy before torch is imported; the preloading interpreter (--python_preload) runs it once and
# calls _ddprun_arm again in each worker it forks.
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
    ddp_open = False  # a DDP forward's backward is counted as open (_count_ddp_forwards)

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
            cls.issued_locked(page)

    @classmethod
    def issued_locked(cls, page):
        """issued, for a caller that holds the lock and has the page."""
        if cls.open_collectives == 0:
            cls.open_since_ns = _monotonic_ns()
        cls.open_collectives += 1
        page[1] += 1  # ISSUED

    @classmethod
    def completed(cls, count=1):
        page = cls.page
        if page is None or count == 0:
            return
        with cls.lock:
            cls.open_collectives -= count
            if cls.open_collectives == 0:
                page[4] += _monotonic_ns() - cls.open_since_ns  # WAIT_NS
            page[2] += count  # COMPLETED

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
        has nothing to mark, and maps none now), and the works it watches are waited for."""
        if cls.page is not None:
            cls.finished()
        _Completions.drain(5.0)


class _Unwatched:
    """What the hook cannot watch in the installed torch, said on stderr once a process, in one
    line per find, where the job's first rank is (RANK 0; the preloading interpreter, whose
    environment says RANK 0, says it before forking any worker, which then says it no more):

      ddprun: hang detection cannot watch WHAT in torch VERSION (WHY): WHAT ELSE IT DOES

    A torch that moves a hook point (_PATCHES) so leaves hang and straggler detection
    blind there for all to see; the tests of the installed torch fail on the line."""

    said = set()

    @classmethod
    def say(cls, what, why, instead):
        if what in cls.said:
            return
        cls.said.add(what)
        if _os.environ.get("RANK", "0") != "0":
            return
        torch = _sys.modules.get("torch")
        version = getattr(torch, "__version__", "?")
        try:
            _sys.stderr.write("ddprun: hang detection cannot watch %s in torch %s (%s): %s\n"
                              % (what, version, why, instead))
            _sys.stderr.flush()
        except Exception:
            pass


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
            if isinstance(work, _DrainMark):
                work.done.set()
                continue
            try:
                work.wait()  # torch releases the GIL while it waits
            except BaseException:
                pass  # failed: finished all the same; the script sees the error in its own wait
            _Progress.completed()
            del work

    @classmethod
    def drain(cls, timeout):
        """At exit, before the interpreter is torn down: waits, at most `timeout` seconds, until
        the thread has waited for every work handed to it. A thread still inside a Work's
        wait() when the interpreter finalizes would take the GIL back from C++ (pybind11's
        gil_scoped_release) as the interpreter ends it, which aborts the process ("terminate
        called without an active exception"); in the queue's get, in C, it is ended cleanly.
        (Whether this is the abort seen now and then at the end of hooked jobs on torch 2.15 is
        not known: bench/RESULTS.md, 2026-12-07.)"""
        if cls.pid != _os.getpid() or cls.pending is None:
            return
        mark = _DrainMark()
        cls.pending.put(mark)
        mark.done.wait(timeout)


class _DrainMark:
    """What _Completions.drain puts in the queue: set once the works before it are waited."""

    def __init__(self):
        import threading
        self.done = threading.Event()


class _BackwardEnds:
    """The collectives a counting group starts inside a backward pass (DDP's bucket
    all-reduces), all finished once their waits return, in a callback that torch's autograd
    engine runs when that backward pass ends, on the thread that ran it. DDP waits for the same
    works there (its own callback, queued after the last bucket's); waiting first changes
    nothing but which of the two waits returns last.

    Whatever runs for a bucket lies on the backward pass's path, so this does as little as it
    can: a bucket takes one lock, no thread is woken, and the waits and the finished count come
    once a pass (bench/python_hook_cost.py measures it). Waking _Completions' thread for each
    bucket, and handing it the GIL and back, cost a bucket about 25 us more."""

    engine = None  # torch's autograd engine, once torch is imported
    works = []  # started in the running backward pass, not yet waited for: a callback queued

    @classmethod
    def take_locked(cls, work):
        """Takes `work`, started in the running backward pass, to wait for when that pass ends;
        False, and nothing taken, outside a backward pass. The caller holds _Progress.lock."""
        if not cls.works:
            try:
                cls.engine.queue_callback(cls.finish)
            except Exception:  # no backward pass running here (or no engine)
                return False
        cls.works.append(work)
        return True

    @classmethod
    def finish(cls):
        """Waits for the works taken, and counts them finished. The engine runs it at the
        backward pass's end; a DDP forward runs it where a backward pass ended in an exception
        (the engine then drops its callbacks), so that no later pass finds a callback taken
        for it that will never run."""
        with _Progress.lock:
            works = cls.works[:]
            cls.works.clear()
        for work in works:
            try:
                work.wait()  # torch releases the GIL while it waits
            except BaseException:
                pass  # failed: finished all the same; DDP raises it in its own wait
        _Progress.completed(len(works))


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


# Those of _COLLECTIVES that every torch from 1.13 on has: one that is missing is a hook point
# moved, said (_Unwatched).
_CORE_COLLECTIVES = ("all_reduce", "all_gather", "all_to_all", "barrier", "broadcast", "gather",
                     "reduce", "reduce_scatter", "scatter", "send", "recv")


class _Nesting:
    """Which thread is inside a counted collective: one that calls another (a c10d function
    calling its group's method that ddprun's group wrapper counts) is counted once."""

    inside = None  # a threading.local, made at the first count

    @classmethod
    def depth(cls):
        if cls.inside is None:
            import threading
            cls.inside = threading.local()
        return getattr(cls.inside, "depth", 0)


def _run_counted(collective, args, kwargs):
    """Calls `collective`, counted as one collective: issued now, finished when it returns, or,
    when it returns a Work (async_op=True), when that work's wait returns on _Completions'
    thread."""
    if _Nesting.depth() or _Progress.mapped_page() is None:
        return collective(*args, **kwargs)
    _Progress.issued()
    _Nesting.inside.depth = 1
    finished_here = True
    try:
        work = collective(*args, **kwargs)
        if work is not None and hasattr(work, "wait"):
            _Completions.watch(work)
            finished_here = False
        return work
    finally:
        _Nesting.inside.depth = 0
        if finished_here:
            _Progress.completed()


def _run_in_group(collective, args, kwargs):
    """Calls a counting group's `collective` (a gloo group's method: it queues its work and
    returns it), then counts it issued, and finished when the work's wait returns: at the end of
    the running backward pass (_BackwardEnds: DDP's buckets), or on _Completions' thread outside
    one. Called by a c10d function that counts it already, it only passes the call on. The
    count comes after the call, so that a bucket's all-reduce is queued as early as torch's call
    into Python allows."""
    page = _Progress.page
    if page is None or getattr(_Nesting.inside, "depth", 0):
        return collective(*args, **kwargs)
    work = collective(*args, **kwargs)
    with _Progress.lock:
        _Progress.issued_locked(page)
        in_pass = _BackwardEnds.take_locked(work)
    if not in_pass:
        _Completions.watch(work)
    return work


def _count_collectives(distributed):
    import functools

    def counting(collective):
        @functools.wraps(collective)
        def counted(*args, **kwargs):
            return _run_counted(collective, args, kwargs)
        counted._ddprun_counted = True
        return counted

    for name in _COLLECTIVES:
        collective = getattr(distributed, name, None)
        if callable(collective) and not getattr(collective, "_ddprun_counted", False):
            setattr(distributed, name, counting(collective))
    missing = [name for name in _CORE_COLLECTIVES if not callable(getattr(distributed, name, None))]
    if missing:
        _Unwatched.say("torch.distributed." + ", ".join(missing), "not there",
                       "a rank waiting in one looks stalled in its own code")
    _mark_group_lifetime(distributed)


def _mark_group_lifetime(distributed):
    """A process that destroys its default group is finished (_Progress.finished) until it
    forms one again."""
    import functools
    initialize = getattr(distributed, "init_process_group", None)
    destroy = getattr(distributed, "destroy_process_group", None)
    if not callable(initialize) or not callable(destroy):
        _Unwatched.say("the process group's end", "no init_process_group or "
                       "destroy_process_group", "a rank quiet after its last collective may be "
                       "taken for hung")
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


# A process group's methods that are collectives, in torch 1.13's names and 2.x's; a counting
# group counts each call. Its other methods (rank, size, names, options) are passed on as they
# are.
_GROUP_COLLECTIVES = frozenset((
    "allreduce", "allreduce_coalesced", "allgather", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "_allgather_base", "alltoall", "alltoall_base", "barrier",
    "monitored_barrier", "broadcast", "gather", "reduce", "reduce_scatter",
    "reduce_scatter_tensor_coalesced", "_reduce_scatter_base", "scatter", "send", "recv",
    "recv_anysource",
))


class _CountingGroups:
    """DDP all-reduces its gradient buckets in C++, through its process group's virtual
    methods, out of the c10d functions' sight. So a DDP model is given, in place of its group, a
    counting group: a Python subclass of torch's ProcessGroup (whose C++ methods torch forwards
    to a Python subclass's) that passes every call on to the group it wraps and counts each
    collective, every bucket's all-reduce among them: issued when DDP starts it, finished when
    its work's wait returns at the end of the backward pass (_BackwardEnds), where DDP waits for
    it too. Nothing is divided or copied: the group computes what it would have. Only gloo's
    groups are wrapped (see around).

    c10d knows a counting group as an alias of its group (the same rank table, name and
    backend), and it compares equal to that group, so dist.get_rank(model.process_group), DDP's
    own checks and pickling answer as before. Where a group cannot be wrapped, or a DDP fails to
    build over one, DDP gets its own group and each forward's backward is counted as one
    collective (_count_ddp_forwards)."""

    cls = None
    failed = False  # a DDP did not build over a counting group: the rest get their own

    @classmethod
    def around(cls, group):
        """A counting group passing calls on to `group`; None where there can be none."""
        from torch.distributed import ProcessGroup
        if cls.failed or not isinstance(group, ProcessGroup):
            return None
        if getattr(group, "_ddprun_inner", None) is not None:
            return group  # counting already
        try:
            if group._get_backend_name() != "gloo":
                # NCCL's work is done on the device: its wait() returns once the device stream
                # waits, not when the all-reduce is over, so a count here would say little more
                # than the forward's; and only gloo has been tried under this wrapper.
                return None
            if cls.cls is None:
                cls.cls = cls._make_class(ProcessGroup)
            counting = cls.cls(group)
            counting.getBackendName()  # what torch asks first; fails here if it cannot work
            cls._alias_in_c10d(counting, group)
            return counting
        except Exception as error:
            cls.fail("a counting group could not be made: %s: %s" % (type(error).__name__, error))
            return None

    @classmethod
    def fail(cls, why):
        """No more DDP models over counting groups in this process, and that said."""
        cls.failed = True
        _Unwatched.say(_DDP_BUCKETS, why, _DDP_BUCKETS_INSTEAD)

    @staticmethod
    def _make_class(ProcessGroup):
        """The subclass of torch's ProcessGroup that counts: every public method and property
        of the base passes the call on to the wrapped group."""
        class CountingGroup(ProcessGroup):
            def __init__(self, inner):
                super().__init__(inner.rank(), inner.size())
                self._ddprun_inner = inner

            def getBackendName(self):
                # What torch's C++ asks a Python group for its backend. Not the group's own
                # name: where torch's C++ reads "gloo" it takes the group for its gloo class
                # (DDP's logger, torch 1.13, reads a field of it; 2.x asks for its gloo
                # backend), which this is not. Python asks _get_backend_name, passed on.
                return "ddprun-counting-" + self._ddprun_inner._get_backend_name()

            def getRank(self):  # the same for torch versions whose C++ asks Python for these
                return self._ddprun_inner.rank()

            def getSize(self):
                return self._ddprun_inner.size()

            def shutdown(self):
                pass  # the group itself is shut down and aborted, once, by c10d's tables

            def abort(self):
                pass

            def __eq__(self, other):
                return other is self or other is self._ddprun_inner

            def __ne__(self, other):
                return not self.__eq__(other)

            __hash__ = object.__hash__

            def __getattr__(self, name):  # what the base does not have: the group's own
                inner = self.__dict__.get("_ddprun_inner")
                if inner is None:
                    raise AttributeError(name)
                return getattr(inner, name)

        def passed_on(name):
            def method(self, *args, **kwargs):
                return getattr(self._ddprun_inner, name)(*args, **kwargs)
            return method

        def counted(name):
            def method(self, *args, **kwargs):
                return _run_in_group(getattr(self._ddprun_inner, name), args, kwargs)
            return method

        for name in dir(ProcessGroup):
            if name.startswith("__") or name in vars(CountingGroup):
                continue
            member = getattr(ProcessGroup, name)
            if isinstance(member, property):
                setattr(CountingGroup, name,
                        property(lambda self, name=name: getattr(self._ddprun_inner, name)))
            elif callable(member) and not isinstance(member, type):
                setattr(CountingGroup, name,
                        counted(name) if name in _GROUP_COLLECTIVES else passed_on(name))
        return CountingGroup

    @staticmethod
    def _alias_in_c10d(counting, group):
        """Every table of c10d's keyed by process group (torch 1.13: the module's _pg_*
        dictionaries; 2.x: those of its _world) gets the counting group as a second key of the
        group's entry."""
        # The holders' own dictionaries, read without attribute access: that would run
        # properties, and torch 2.x's deprecated names (c10d's reduce_op) warn when touched.
        c10d = _sys.modules.get("torch.distributed.distributed_c10d")
        holders = [c10d, vars(c10d).get("_world")]
        for holder in holders:
            try:
                tables = list(vars(holder).values())
            except TypeError:  # None, or an object without a __dict__
                continue
            for table in tables:
                if issubclass(type(table), dict) and group in table:
                    table[counting] = table[group]


# What _Unwatched says when DDP's buckets cannot be counted one by one.
_DDP_BUCKETS = "DDP's gradient buckets one by one"
_DDP_BUCKETS_INSTEAD = "each backward counts as one collective"


def _count_ddp_buckets(ddp_module):
    """Each DDP model is built over a counting group (_CountingGroups); one that is not has
    each forward's backward counted instead (_count_ddp_forwards)."""
    import functools
    import inspect
    ddp = getattr(ddp_module, "DistributedDataParallel", None)
    if ddp is None:
        return
    import torch
    _BackwardEnds.engine = getattr(torch.autograd.Variable, "_execution_engine", None)
    initialize = ddp.__init__
    parameters = inspect.signature(initialize).parameters
    if "process_group" not in parameters:
        _Unwatched.say(_DDP_BUCKETS, "DistributedDataParallel takes no process_group",
                       _DDP_BUCKETS_INSTEAD)
        return _count_ddp_forwards(ddp)
    position = list(parameters).index("process_group") - 1  # after self

    @functools.wraps(initialize)
    def counting_init(self, *args, **kwargs):
        if kwargs.get("device_mesh") is not None:  # torch 2.x: DDP takes its group from it
            return initialize(self, *args, **kwargs)
        group = args[position] if len(args) > position else kwargs.get("process_group")
        if group is None:
            c10d = _sys.modules["torch.distributed.distributed_c10d"]
            group = c10d._get_default_group() if c10d.is_initialized() else None
        counting = _CountingGroups.around(group) if _Progress.mapped_page() is not None else None
        if counting is None:
            return initialize(self, *args, **kwargs)
        if len(args) > position:
            counted_args = args[:position] + (counting,) + args[position + 1:]
            counted_kwargs = kwargs
        else:
            counted_args, counted_kwargs = args, dict(kwargs, process_group=counting)
        try:
            return initialize(self, *counted_args, **counted_kwargs)
        except Exception as error:
            # Not over a counting group (a torch whose DDP wants more of its group than this
            # passes on): this DDP, and every later one, over its own group, as if never
            # wrapped. An error of the program's own comes again from the second build, and
            # then it is not said as a hook point's.
            try:
                built = initialize(self, *args, **kwargs)
            except Exception:
                _CountingGroups.failed = True
                raise
            _CountingGroups.fail("DDP did not build over a counting group: %s: %s"
                                 % (type(error).__name__, error))
            return built

    ddp.__init__ = counting_init
    _count_ddp_forwards(ddp)


def _count_ddp_forwards(ddp):
    """For a DDP model not over a counting group: each forward (with gradients) opens one
    collective, which the next optimizer step or DDP forward closes: the rank is inside it
    through the loss and the backward, where DDP's all-reduces run. (For every model, a forward
    first finishes the buckets of a backward pass that ended in an exception.)"""
    import functools
    import torch
    forward = ddp.forward

    @functools.wraps(forward)
    def counted_forward(self, *inputs, **kwargs):
        if _BackwardEnds.works:
            _BackwardEnds.finish()
        if (getattr(getattr(self, "process_group", None), "_ddprun_inner", None) is None
                and not getattr(self, "_ddprun_uncounted", False) and torch.is_grad_enabled()):
            _Progress.ddp_forward()
        return forward(self, *inputs, **kwargs)

    ddp.forward = counted_forward


def _count_optimizer_steps(optim):
    optimizer = getattr(optim, "Optimizer", None)
    if optimizer is None:
        _Unwatched.say("optimizer steps", "no torch.optim.Optimizer",
                       "no steps are counted, so no straggler is named")
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


# What to patch in which module, the moment that module's import has run, and what the patch
# watches (said by _Unwatched if it fails). The hook points, tested on Debian's torch 1.13 and
# on the release tests/pytorch/torch_pin.txt pins:
# - torch.distributed's collective functions (_COLLECTIVES), init_process_group and
#   destroy_process_group, wrapped;
# - DistributedDataParallel.__init__'s process_group, given a counting group: torch's
#   ProcessGroup subclassed in Python, its Python methods called from C++ (_CountingGroups),
#   and the process group tables of c10d (_alias_in_c10d); the autograd engine's
#   queue_callback (_BackwardEnds); DDP's forward (_count_ddp_forwards);
# - torch.optim.optimizer.register_optimizer_step_post_hook (2.x), else Optimizer.step.
# DDP's register_comm_hook was looked at and not used: a script may register only one comm
# hook (DDP refuses a second), so a hook of ddprun's would take the place of the script's own,
# and a Python hook replaces the reducer's C++ all-reduce with a Python call per bucket.
_PATCHES = {
    "torch.distributed": (_count_collectives, "torch.distributed's collectives"),
    "torch.nn.parallel.distributed": (_count_ddp_buckets, _DDP_BUCKETS),
    "torch.optim": (_count_optimizer_steps, "optimizer steps"),
}


def _patch(name, module):
    """Applies the patch of module `name`; says what goes unwatched when it fails."""
    patch, what = _PATCHES.pop(name)
    try:
        patch(module)
    except Exception as error:
        _Unwatched.say(what, "%s: %s" % (type(error).__name__, error), "it goes uncounted")


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
            if name in _PATCHES:
                _patch(name, module)
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
        _patch(name, _sys.modules[name])
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
