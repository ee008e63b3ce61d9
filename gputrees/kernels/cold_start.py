"""Which CPU kernels ``"auto"`` gives a fit while the compiled ones are not cached yet.

The Numba kernels compile on a family's first fit, a minute or more on two
cores, and load from Numba's on-disk cache afterwards. While an estimator
family has not been compiled on this machine, ``"auto"`` runs its small fits
on the NumPy (``"bincount"``) kernels: they grow the same models (their sums
run in the same order) and compile nothing, so a first fit on a small data
set takes a second, not a minute. The family moves to the Numba kernels, for
the rest of the process, at its first fit whose work (rows x features x
trees) exceeds :data:`LARGE_WORK`, or after :data:`COLD_FITS` small fits (a
loop of fits pays the compilation once it has spent a fair share of it); a
stamp beside Numba's cache then tells later processes that the family's
kernels are compiled. ``gputrees compile`` compiles every family ahead and
stamps it.

An estimator's fit runs inside :func:`fitting`, which makes the decision once
for the whole fit (an ensemble's trees follow their ensemble). Outside a fit,
predictions take the NumPy kernels until some family has compiled; every
other caller (Dask workers, the engine's tests) takes Numba, as before.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import pathlib
import threading

__all__ = ["LARGE_WORK", "COLD_FITS", "fitting", "fit_choice", "any_compiled", "use_compiled", "mark_compiled",
           "stamp_path", "forget"]

#: Rows x features x trees of a fit above which it compiles rather than run the NumPy kernels (100 rounds on
#: 20,000 x 5 take about 3 s on those, a 100-tree forest on 5,000 x 10 about 5 s).
LARGE_WORK = 10_000_000
#: Small fits of a family in one process on the NumPy kernels before it compiles.
COLD_FITS = 10

_lock = threading.Lock()
_compiled = set()  # families on the Numba kernels in this process
_cold_fits = {}  # family -> small fits run on the NumPy kernels
_any_stamp = [False]  # a stamp of some family seen
_fit_choice = contextvars.ContextVar("gputrees_fit_compiled", default=None)


@contextlib.contextmanager
def fitting(family: str, work: int):
    """The fit of ``family`` (rows x features x trees: ``work``) inside: :func:`fit_choice` answers for it.

    A fit inside another one (an ensemble's trees) follows the outer fit's decision.
    """
    if _fit_choice.get() is not None:
        yield
        return
    token = _fit_choice.set(use_compiled(family, work))
    try:
        yield
    finally:
        _fit_choice.reset(token)


def fit_choice() -> bool | None:
    """Whether the fit running now takes the Numba kernels; None outside a fit."""
    return _fit_choice.get()


def any_compiled() -> bool:
    """Whether some family has compiled, in this process or (a stamp) on this machine: predictions outside a fit
    then take the Numba kernels, which share their prediction kernels."""
    with _lock:
        if _compiled or _any_stamp[0]:
            return True
    cache_dir, key = _stamp_place()
    found = any(cache_dir.glob(f"gputrees-compiled-*-{key}.stamp"))
    with _lock:
        _any_stamp[0] = _any_stamp[0] or found
    return found


def use_compiled(family: str, work: int | None = None) -> bool:
    """Whether ``family``'s fit of ``work`` (rows x features x trees) takes the Numba kernels (each call with a
    ``work`` counts as a fit; None only asks).

    True once the family has compiled in this process or on this machine (a stamp), for a large fit, and after
    :data:`COLD_FITS` small ones; the decision to compile is stamped.
    """
    with _lock:
        if family in _compiled:
            return True
        if stamp_path(family).exists():
            _compiled.add(family)
            return True
        if work is None:
            return False
        fits = _cold_fits.get(family, 0)
        if work <= LARGE_WORK and fits < COLD_FITS:
            _cold_fits[family] = fits + 1
            return False
    mark_compiled(family)
    return True


def mark_compiled(family: str) -> None:
    """``family`` takes the Numba kernels from now on, in this process and (through its stamp) in later ones."""
    with _lock:
        _compiled.add(family)
    path = stamp_path(family)
    # a read-only cache keeps no stamp: this process still compiles, later ones decide again
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def stamp_path(family: str) -> pathlib.Path:
    """The stamp of ``family`` beside Numba's cache of the kernels, named by Numba's version and the kernels'
    sources' newest time (an upgrade or an edited source compiles again, and stamps again)."""
    cache_dir, key = _stamp_place()
    return cache_dir / f"gputrees-compiled-{family}-{key}.stamp"


def forget() -> None:
    """Forget this process's decisions (for tests; the stamps stay)."""
    with _lock:
        _compiled.clear()
        _cold_fits.clear()
        _any_stamp[0] = False


@functools.lru_cache(maxsize=1)
def _stamp_place() -> tuple[pathlib.Path, str]:
    """Numba's cache folder for the kernels' package (``NUMBA_CACHE_DIR``, else beside the sources where
    writable, else the user's cache: Numba's rules), and the stamps' key."""
    import numba
    from numba.core.caching import FunctionCache

    from . import rules

    newest = max(p.stat().st_mtime_ns for p in pathlib.Path(__file__).parent.rglob("*.py"))
    cache_dir = pathlib.Path(FunctionCache(rules.newton_proxy).cache_path)
    return cache_dir, f"{numba.__version__}-{newest}"
