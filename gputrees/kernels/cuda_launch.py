"""Launching numba-cuda kernels again and again at a few microseconds of host time a launch.

numba-cuda's launch, ``kernel[grid, block, stream, shared](*args)``, types
every argument, makes a view of every device array and converts every value
on every call: hundreds of microseconds of host time for a launch of many
arrays, the largest part of a GPU fit at a million rows
(``bench/results/gpu-h200-20261128-s56``). A fit launches the same few
kernels with arguments of the same types thousands of times, so
:class:`Launcher` asks numba-cuda once per kernel and kind of arguments (the
first launch goes through numba-cuda, compiling the kernel), keeps the
compiled kernel, and passes later launches' parameters, as numba-cuda lays
them out (an array: meminfo, parent, size, itemsize, data pointer, shape,
strides; a scalar: its C type), straight to ``cuda.core``'s launch.

The first launch of each kernel and kind of arguments also checks the
parameters built here against numba-cuda's own for the same values, and
raises if they differ. A numba-cuda without the pieces this relies on (a
compiled kernel's ``argument_types``, its ``cuda.core`` kernel), or a kernel
that numba-cuda specialises by launch configuration, debugs or extends,
keeps numba-cuda's own launch: :func:`launch_counts` tells how many launches
took which way.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

__all__ = ["Launcher", "argument_key", "array_parameters", "comparable_parameters", "launch_counts"]

#: The kinds of scalars numba types by their Python type (a Python int by its range: int64 or uint64).
_SCALARS = (bool, int, float)


def argument_key(value):
    """What decides numba's type of ``value``, cheaply: a device array's dtype, dimensions and contiguity,
    a scalar's type (a Python int's range too); None for anything else (launched through numba-cuda)."""
    if isinstance(value, _SCALARS):
        if type(value) is int:
            return int, value >= 2**63
        return type(value)
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    shape = getattr(value, "shape", None)
    if shape is None or shape == () and not hasattr(value, "__cuda_array_interface__"):
        return type(value)  # a NumPy scalar
    if not hasattr(value, "__cuda_array_interface__"):
        return None  # a host array: numba-cuda copies it
    flags = getattr(value, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):  # CuPy's
        return dtype.char, len(shape), flags.c_contiguous, flags.f_contiguous
    return dtype.char, len(shape), value.is_c_contiguous(), value.is_f_contiguous()  # numba's DeviceNDArray


def _pointer(value) -> int:
    data = getattr(value, "data", None)
    ptr = getattr(data, "ptr", None)  # CuPy's MemoryPointer
    if ptr is not None:
        return ptr
    return value.__cuda_array_interface__["data"][0]


def array_parameters(value) -> list:
    """A device array's kernel parameters as numba-cuda lays them out: meminfo and parent (0), size,
    itemsize, data pointer, shape, strides in bytes (a C-contiguous array's computed from its shape, as
    numba-cuda computes them from an interface that leaves them out)."""
    shape = tuple(value.shape)
    itemsize = value.dtype.itemsize
    if _c_contiguous(value):
        strides = [0] * len(shape)
        step = itemsize
        for d in range(len(shape) - 1, -1, -1):
            strides[d] = step
            step *= shape[d]
    else:
        strides = list(value.strides)
    return [0, 0, int(value.size), itemsize, int(_pointer(value)), *shape, *strides]


def _c_contiguous(value) -> bool:
    flags = getattr(value, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):
        return bool(flags.c_contiguous)
    return bool(value.is_c_contiguous())


@dataclass
class _Compiled:
    kernel: object  # cuda.core's Kernel
    converters: tuple  # per argument: None (an array), or what turns the scalar into numba's parameter


_counts = {"direct": 0, "numba": 0}


def launch_counts() -> dict:
    """Launches made by :class:`Launcher` so far: ``direct`` (parameters passed straight to cuda.core) and
    ``numba`` (through numba-cuda's own launch)."""
    return dict(_counts)


def _parameters(converters, args, stride_extents=None) -> list:
    """The launch's parameters: each array's (:func:`array_parameters`, where its converter is None), each
    scalar converted; ``stride_extents`` (a dict), where given, gets each stride's position -> its dimension's
    extent."""
    params = []
    for convert, value in zip(converters, args):
        if convert is None:
            if stride_extents is not None:
                first_stride = len(params) + 5 + len(value.shape)
                for d, extent in enumerate(value.shape):
                    stride_extents[first_stride + d] = extent
            params += array_parameters(value)
        else:
            params.append(convert(value))
    return params


def comparable_parameters(params) -> list:
    """Kernel parameters as plain values (a ctypes scalar's value; a null pointer 0), to compare two launches'."""
    out = []
    for p in params:
        if isinstance(p, ctypes._SimpleCData):
            p = p.value
        out.append(0 if p is None else p)
    return out


def _same_parameters(mine, theirs, array_shapes) -> bool:
    """Equal, but for the strides of dimensions of extent 0 or 1 (never multiplied by a nonzero index)."""
    mine, theirs = comparable_parameters(mine), comparable_parameters(theirs)
    if len(mine) != len(theirs):
        return False
    for i, (a, b) in enumerate(zip(mine, theirs)):
        stride_extent = array_shapes.get(i)
        if stride_extent is not None and stride_extent <= 1:
            continue
        if a != b or isinstance(a, float) != isinstance(b, float):
            return False
    return True


class Launcher:
    """Launches of numba-cuda kernels on device arrays (CuPy's, or numba's views) and scalars, by
    :func:`argument_key` remembered per kernel (see the module's docstring)."""

    def __init__(self):
        self._compiled = {}
        self._configs = {}

    def __call__(self, dispatcher, blocks: int, threads: int, stream, shared_bytes: int, args, numba_launch) -> None:
        """Launch ``dispatcher`` over ``blocks`` x ``threads`` on numba ``stream`` with ``shared_bytes`` of
        dynamic shared memory; ``numba_launch()`` launches it through numba-cuda and returns the arguments
        it passed (``args`` or their views)."""
        kinds = tuple(map(argument_key, args))
        entry = None if None in kinds else self._compiled.get((dispatcher, kinds), False)
        if entry:
            _counts["direct"] += 1
            self._launch(entry.kernel, blocks, threads, stream, shared_bytes, _parameters(entry.converters, args))
            return
        views = numba_launch()
        _counts["numba"] += 1
        if entry is False:
            self._compiled[dispatcher, kinds] = self._remember(dispatcher, args, views, stream)

    def _launch(self, kernel, blocks, threads, stream, shared_bytes, params):
        from cuda.core import launch

        config = self._configs.get((blocks, threads, shared_bytes))
        if config is None:
            from cuda.core import LaunchConfig

            config = self._configs[blocks, threads, shared_bytes] = LaunchConfig(
                grid=blocks, block=threads, shmem_size=shared_bytes)
        launch(stream, config, kernel, *params)

    @staticmethod
    def _remember(dispatcher, args, views, stream):
        """The compiled kernel that launched ``views``, with how each argument becomes its parameters, after
        checking them against numba-cuda's; None where numba-cuda's own launch must stay."""
        try:
            from cuda.core import LaunchConfig, launch  # noqa: F401 - the direct launches need them

            if getattr(dispatcher, "_launch_config_sensitive", True):
                return None
            types = tuple(dispatcher.typeof_pyval(v) for v in views)
            compiled = dispatcher.overloads.get(types)
            if compiled is None or compiled.debug or compiled.cooperative or compiled.extensions:
                return None
            arg_types = compiled.argument_types
            kernel = compiled._codelibrary.get_cufunc().kernel
            prepare = compiled._prepare_args
        except (AttributeError, ImportError):
            return None
        from numba.cuda import types as nbtypes

        converters = []
        for ty in arg_types:
            if isinstance(ty, nbtypes.Array):
                converters.append(None)
            elif isinstance(ty, nbtypes.Integer):
                converters.append(getattr(ctypes, f"c_{ty}"))
            elif ty == nbtypes.float64:
                converters.append(ctypes.c_double)
            elif ty == nbtypes.float32:
                converters.append(ctypes.c_float)
            elif ty == nbtypes.boolean:
                converters.append(bool)
            else:
                return None
        array_shapes = {}
        mine = _parameters(converters, args, array_shapes)
        theirs, retr = [], []
        for view, ty in zip(views, arg_types):
            prepare(ty, view, stream, retr, theirs)
        if not _same_parameters(mine, theirs, array_shapes):
            raise RuntimeError(
                f"gputrees' launch parameters of {getattr(dispatcher, 'py_func', dispatcher)} differ from "
                f"numba-cuda's: {comparable_parameters(mine)} against {comparable_parameters(theirs)}")
        return _Compiled(kernel, tuple(converters))
