"""Compilation options, the compiled rules, and threads: what every CPU kernel module shares.

Every kernel is compiled by Numba on its first call for the argument types it
meets and cached on disk (``cache=True``: ``__pycache__`` beside the sources,
or ``NUMBA_CACHE_DIR``), so a later process loads the machine code instead of
compiling again. :func:`compile_rules` makes the rules of
:mod:`gputrees.kernels.rules` callable from the kernels (done on import).

Threads: the parallel kernels split their work into ``n_threads`` blocks
(``numba.prange``) and set Numba's thread count for the call
(:class:`Threads`, local to the calling thread). The work is split so that
every output element is summed by one thread in one fixed order: results do
not depend on the number of threads.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from types import FunctionType

import numba
from numba.extending import overload

from .. import rules

JIT = dict(cache=True, nogil=True)
#: NumPy's float semantics (a division by zero gives inf / NaN, as in the
#: generic code) instead of Python's ZeroDivisionError checks.
JIT_NUMPY = dict(JIT, error_model="numpy")
#: The functions below the kernels' parallel loops that neither allocate nor
#: return an array: compiled without the runtime's reference counts (Numba's
#: ``_nrt`` option, where this Numba has it). With them, every array argument
#: and view costs an atomic increment and a decrement per call (a counter the
#: threads share where the array is shared). Such a function must not return
#: an array nor keep one an NRT function returns (its count would go wrong).
try:
    from numba.core.cpu import CPUTargetOptions

    JIT_LEAF = dict(JIT_NUMPY, _nrt=False) if hasattr(CPUTargetOptions, "_nrt") else JIT_NUMPY
except ImportError:  # (an internal module of Numba's)
    JIT_LEAF = JIT_NUMPY


def compile_rules():
    """Make every function of :mod:`gputrees.kernels.rules` callable from the CPU kernels (Numba's CPU target):
    each rule is compiled within the kernels that call it, with :data:`JIT_LEAF`'s options."""
    options = {k: v for k, v in JIT_LEAF.items() if k != "cache"}
    for fn in vars(rules).values():
        if isinstance(fn, FunctionType) and fn.__module__ == rules.__name__:
            overload(fn, jit_options=options, strict=False, target="cpu")(lambda *args, _fn=fn: _fn)


def _sources_fingerprint() -> bytes:
    """A hash of the compiled sources: the rules and every module of this package."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for path in [Path(rules.__file__)] + sorted(here.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.digest()


def stamp_kernel_caches():
    """Tie every cached kernel of this package to all of its sources and the rules.

    A kernel's machine code holds what it calls in other modules (the rules,
    the memory intrinsics, another module's kernels), but Numba validates a
    cache entry by the source of the kernel's own file only: after a change
    to a rule, the cached kernels that call it would still be loaded. Each of
    Numba's cache locators gets a twin for the files of this package whose
    stamp adds a hash of them all; other code's caches are untouched.
    """
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if impl is None:  # (Numba's caching machinery changed: file stamps only)
        return
    here = Path(__file__).parent.resolve()
    fingerprint = _sources_fingerprint()

    def stamped(locator):
        class Stamped(locator):
            @classmethod
            def from_function(cls, py_func, py_file):
                if Path(py_file).resolve().parent != here:
                    return None
                return super().from_function(py_func, py_file)

            def get_source_stamp(self):
                return super().get_source_stamp(), fingerprint

        Stamped.__name__ = Stamped.__qualname__ = "GputreesKernels" + locator.__name__
        return Stamped

    classes = [c for c in impl._locator_classes if not c.__name__.startswith("GputreesKernels")]
    impl._locator_classes = [stamped(c) for c in classes] + classes


compile_rules()
stamp_kernel_caches()


@functools.cache
def compiled_rule(name: str):
    """The rule ``name`` of :mod:`gputrees.kernels.rules` compiled as a function of its own (what the kernels
    call, callable from Python: the tests compare it with the oracle)."""
    return numba.njit(**{k: v for k, v in JIT_LEAF.items() if k != "cache"})(getattr(rules, name))


def thread_count(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: None or -1 = every core Numba sees, -2 = all but one, k > 0 = k (capped)."""
    available = numba.config.NUMBA_NUM_THREADS
    if n_jobs == 0:
        raise ValueError("n_jobs=0 means no thread at all; use None or -1 (every core) or a positive count")
    if n_jobs is None:
        return available
    if n_jobs < 0:
        return max(1, available + 1 + n_jobs)
    return max(1, min(int(n_jobs), available))


#: Elementary updates (row x feature, row x tree level...) a thread should get
#: before a pass is split over threads: at about 1 ns each, 2^14 of them take
#: ~16 us, several times the cost of a parallel region whose threads are
#: still spinning from the last one, so smaller passes run on one thread.
MIN_WORK_PER_THREAD = 1 << 14


def threads_for(n_threads: int, work: int) -> int:
    """Threads for a pass of ``work`` elementary updates: at most ``n_threads``, each with enough work."""
    return max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS, int(work) // MIN_WORK_PER_THREAD))


class Threads:
    """Context manager setting Numba's thread count for this thread (capped at the cores Numba sees)."""

    def __init__(self, n: int):
        self.n = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))

    def __enter__(self):
        self.before = numba.get_num_threads()
        if self.before != self.n:  # (setting the count is not free, and several calls a level do it)
            numba.set_num_threads(self.n)

    def __exit__(self, *exc):
        if self.before != self.n:
            numba.set_num_threads(self.before)


def serial_twin(kernel):
    """``kernel`` (a ``parallel=True`` dispatcher) compiled again without threads: its ``prange`` loops run as
    ``range`` on the calling thread, in the same order, with no parallel region.

    A parallel region costs its launch even when one thread does the work
    (the OpenMP layer's team, schedule and barrier): a boosting tree of a
    small data set runs dozens of them, whose passes are too small for a
    second thread (:data:`MIN_WORK_PER_THREAD`).
    Callers take the twin where the work is that small, or where one
    thread is all they have. The kernels' results do not depend on the
    thread count, so the twin's are the same bit for bit.

    The twin is a copy of the Python function under its own name
    (``<name>_serial``), so that its on-disk cache entry is not the
    parallel kernel's.
    """
    f = kernel.py_func
    twin = FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__, f.__closure__)
    twin.__qualname__ = f.__qualname__ + "_serial"
    twin.__doc__ = f.__doc__
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython", "boundscheck")}
    # Numba compiles a prange loop's body with NumPy's error model (a division
    # by zero gives inf, not an exception); the twin's loops get the same, or
    # its divisions would carry a zero test that keeps them from being
    # vectorised
    options["error_model"] = "numpy"
    return numba.njit(cache=True, **options)(twin)


@numba.njit(inline="always")
def share_of(i, m, n_workers):
    """The worker whose share of ``m`` positions holds position ``i`` (shares ``w m / n_workers`` on)."""
    w = i * n_workers // m
    while (w + 1) * m // n_workers <= i:
        w += 1
    while w * m // n_workers > i:
        w -= 1
    return w


@numba.njit(inline="always")
def n_cuts(a, b, m, n_workers):
    """Pieces of the run ``a:b`` cut at the workers' shares (0 for an empty run)."""
    if b <= a:
        return 0
    return share_of(b - 1, m, n_workers) - share_of(a, m, n_workers) + 1
