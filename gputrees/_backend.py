"""Array backends: the one module that imports array-api-compat.

Everything else in gputrees receives an array namespace ``xp`` (as returned by
:func:`namespace_for`) and uses only functions of the Python array API
standard on it. This module also holds the few places that must talk to a
concrete library: converting pandas / NumPy / CuPy / any array-API input,
moving arrays between host and device, and drawing random numbers (always on
the host with NumPy's ``Generator`` so that the CPU and the GPU see the same
draws for the same ``random_state``).

CuPy is imported lazily, only when a CuPy array is passed or
``device="cuda"`` is requested; importing gputrees never probes for a GPU.
"""

from __future__ import annotations

import numpy as np
import array_api_compat
from array_api_compat import array_namespace

__all__ = [
    "DEVICES",
    "is_dataframe",
    "is_series",
    "namespace_for",
    "namespace_of",
    "is_numpy_namespace",
    "is_cupy_namespace",
    "to_numpy",
    "from_numpy",
    "device_of",
    "DeviceMemoryError",
    "check_device_memory",
]

#: Allowed values of the ``device`` parameter of every estimator.
DEVICES = (None, "cpu", "cuda")


def is_numpy_namespace(xp) -> bool:
    return array_api_compat.is_numpy_namespace(xp)


def is_cupy_namespace(xp) -> bool:
    return array_api_compat.is_cupy_namespace(xp)


def _cupy_namespace():
    try:
        import cupy  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise ImportError(
            'device="cuda" needs CuPy: install gputrees[cuda12] or gputrees[cuda13]'
        ) from exc
    import array_api_compat.cupy as cp_compat

    return cp_compat


class DeviceMemoryError(MemoryError):
    """A fit would need more GPU memory than the device has free (raised before allocating)."""


def free_device_memory() -> int:
    """Bytes the current CUDA device can still give: the driver's free memory plus the free blocks of CuPy's pool."""
    import cupy

    free, _total = cupy.cuda.Device().mem_info
    return int(free) + int(cupy.get_default_memory_pool().free_bytes())


def check_device_memory(xp, needed: int, what: str) -> None:
    """Raise :class:`DeviceMemoryError` naming the sizes when ``needed`` bytes exceed the free GPU memory.

    Does nothing outside CuPy. Called before the fit allocates its arrays, so
    the user gets this error instead of a CUDA out-of-memory error midway.
    """
    if not is_cupy_namespace(xp):
        return
    free = free_device_memory()
    if needed > free:
        gib = 1 << 30
        raise DeviceMemoryError(
            f"{what} needs about {needed / gib:.2f} GiB of GPU memory ({needed} bytes, the formula of "
            f"docs/memory.md) but only {free / gib:.2f} GiB are free on the GPU; fit on fewer rows or "
            "features, lower memory_limit, or fit on the CPU (device='cpu')"
        )


def is_dataframe(X) -> bool:
    """Whether ``X`` is a pandas-like DataFrame (``columns`` and ``iloc``; not ``dtypes``, which pandas builds
    as a Series on every access)."""
    return hasattr(X, "columns") and hasattr(X, "iloc")


def is_series(X) -> bool:
    """Whether ``X`` is a pandas-like Series."""
    return hasattr(X, "dtype") and hasattr(X, "iloc") and not hasattr(X, "columns")


#: DLPack device types of memory a CUDA kernel can read: kDLCUDA (2) and kDLCUDAManaged (13).
_DLPACK_CUDA_DEVICES = (2, 13)


def is_foreign_gpu_array(X) -> bool:
    """A GPU array of a library other than CuPy: ``__cuda_array_interface__``, or DLPack on a CUDA device.

    PyTorch CUDA tensors, JAX or Numba device arrays, for instance; they are
    viewed as CuPy arrays (:func:`as_cupy`) without a copy.
    """
    if type(X).__module__.split(".")[0] == "cupy" or isinstance(X, np.ndarray):
        return False
    try:
        if hasattr(X, "__cuda_array_interface__"):
            return True
        device = getattr(X, "__dlpack_device__", None)
        return device is not None and int(device()[0]) in _DLPACK_CUDA_DEVICES
    except Exception:  # a property raising on a CPU tensor, for instance
        return False


def as_cupy(X):
    """A GPU array (see :func:`is_foreign_gpu_array`) as a CuPy array sharing its memory (no copy)."""
    import cupy

    if hasattr(X, "__cuda_array_interface__"):
        return cupy.asarray(X)
    return cupy.from_dlpack(X)


def is_array_api_array(X) -> bool:
    """True for arrays of a namespace other than NumPy (CuPy, array-api-strict, ...)."""
    return (
        array_api_compat.is_array_api_obj(X)
        and not isinstance(X, np.ndarray)
        and not np.isscalar(X)
        and not is_dataframe(X)
        and not is_series(X)
    )


def namespace_of(*arrays):
    """Array namespace (array-api-compat wrapped) of device arrays."""
    return array_namespace(*arrays)


def device_of(a):
    return array_api_compat.device(a)


def namespace_for(X, device):
    """Pick the namespace a fit or predict runs in.

    Parameters
    ----------
    X : array-like
        The user's input (NumPy, pandas, CuPy, any array-API array, lists).
    device : {None, "cpu", "cuda"}
        ``None`` follows the input: CuPy in, CuPy; array-API arrays stay in
        their namespace; everything else runs on NumPy.

    Returns
    -------
    xp : namespace
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES!r}, got {device!r}")
    if device == "cuda":
        return _cupy_namespace()
    if device == "cpu":
        return array_namespace(np.empty(0))
    if is_foreign_gpu_array(X):
        return _cupy_namespace()
    if is_array_api_array(X):
        return array_namespace(X)
    return array_namespace(np.empty(0))


def to_numpy(a) -> np.ndarray:
    """Copy any array (CuPy, array-api-strict, NumPy) to a NumPy array."""
    if isinstance(a, np.ndarray):
        return a
    if is_foreign_gpu_array(a):
        a = as_cupy(a)
    if hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        return a.get()
    try:
        return np.from_dlpack(a)
    except (TypeError, RuntimeError, BufferError, AttributeError):
        return np.asarray(a)


def from_numpy(xp, a, dtype=None):
    """Put a NumPy array into namespace ``xp`` (on its default device)."""
    a = np.ascontiguousarray(a)
    if is_numpy_namespace(xp):
        return a if dtype is None else a.astype(dtype, copy=False)
    out = xp.asarray(a)
    return out if dtype is None else xp.astype(out, dtype)


def convert_to_namespace(xp, a):
    """Move an array of any namespace into ``xp`` (through the host when needed).

    GPU arrays stay on the GPU: another library's GPU array becomes a CuPy
    view (no copy), and a CuPy array goes to a GPU library (PyTorch, ...)
    through its ``from_dlpack``.
    """
    if is_cupy_namespace(xp) and is_foreign_gpu_array(a):
        return as_cupy(a)
    try:
        same = array_namespace(a) == xp
    except TypeError:  # not an array of a known namespace
        same = False
    if same:
        return a
    if type(a).__module__.split(".")[0] == "cupy" and not is_numpy_namespace(xp) and hasattr(xp, "from_dlpack"):
        try:
            return xp.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError, ValueError):
            pass  # a library that cannot take GPU memory: through the host below
    return from_numpy(xp, to_numpy(a))


def host_rng(random_state) -> np.random.Generator:
    """NumPy generator for ``random_state`` (None, int, RandomState or Generator)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    return np.random.default_rng(random_state)


def random_uniform(xp, rng: np.random.Generator, shape):
    """Uniform [0, 1) float64 draws made on the host and sent to ``xp``."""
    return from_numpy(xp, rng.random(shape))


def _is_missing(v) -> bool:
    if v is None:
        return True
    try:
        return bool(np.isnan(v))
    except TypeError:
        return False


def output_like(X, a):
    """``a`` in the namespace of the input ``X`` (array-API input), else as a NumPy array.

    Predictions follow the data: CuPy (or any array-API) input gets its own
    namespace back; NumPy, pandas and lists get NumPy.
    """
    if is_array_api_array(X):
        return convert_to_namespace(namespace_of(X), a)
    return to_numpy(a)


def labels_like(X, classes, idx):
    """Class labels ``classes[idx]`` for the input ``X``.

    classes : ndarray of shape (n_classes,) (host); idx : (n,) int64 class codes
    (device). Numeric labels for array-API input come back in its namespace;
    otherwise (strings, or NumPy/pandas input) as a NumPy array.
    """
    if is_array_api_array(X) and classes.dtype.kind in "biuf":
        xin = namespace_of(X)
        return xin.take(from_numpy(xin, classes), convert_to_namespace(xin, idx))
    return classes[to_numpy(idx)]


def log_like(proba):
    """Elementwise log of probabilities in their own namespace (``-inf`` for 0, without a warning)."""
    if is_array_api_array(proba):
        return namespace_of(proba).log(proba)
    with np.errstate(divide="ignore"):
        return np.log(proba)
