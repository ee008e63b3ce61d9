"""The GPU's direct launches (gputrees.kernels.cuda_launch) without a GPU: the parameters built for a device
array and for scalars equal what the installed numba-cuda's own launch builds for the same values
(``_Kernel._prepare_args``, run here on stand-ins of device arrays), and a kernel's first launch goes through
numba-cuda, its later ones straight to the launch with those parameters."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
from numba.cuda import types as nbtypes  # noqa: E402
from numba.cuda.np import numpy_support  # noqa: E402
from numba.cuda.typing.typeof import typeof  # noqa: E402

from gputrees.kernels import cuda_launch  # noqa: E402
from gputrees.kernels.cuda_launch import Launcher, argument_key, array_parameters  # noqa: E402

try:
    from numba.cuda.api_util import prepare_shape_strides_dtype
    from numba.cuda.cudadrv.devicearray import _StridedLayoutShim, _StridedMemoryViewShim
    from numba.cuda.dispatcher import _Kernel
except ImportError:  # pragma: no cover - another numba-cuda: the direct launches then check themselves on a GPU
    pytest.skip("this numba-cuda lays out launches differently", allow_module_level=True)


class DeviceArray:
    """A stand-in of a CuPy array at a made-up device address (a NumPy array's shape, strides and flags)."""

    def __init__(self, host, ptr=0x7F00_0000_1000):
        self.host, self.dtype, self.shape, self.size = host, host.dtype, host.shape, host.size
        self.strides, self.flags = host.strides, host.flags
        self.data = SimpleNamespace(ptr=ptr)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3,
                "strides": None if self.flags.c_contiguous else self.strides}


class NumbaView:
    """What numba-cuda's launch receives for a :class:`DeviceArray`: the device memory that the
    DeviceNDArray made from its ``__cuda_array_interface__`` presents to ``_prepare_args`` (strides the
    interface leaves out filled in as numba-cuda fills them)."""

    __cuda_memory__ = True

    def __init__(self, array):
        self.array = array
        desc = array.__cuda_array_interface__
        shape, strides, dtype = prepare_shape_strides_dtype(desc["shape"], desc["strides"], desc["typestr"], "C")
        c, f = bool(array.flags.c_contiguous), bool(array.flags.f_contiguous)
        self._strided_memory_view_shim = _StridedMemoryViewShim(
            ptr=desc["data"][0], shape=shape, dtype=dtype, size=array.size,
            _layout=_StridedLayoutShim(strides_in_bytes=strides, is_contiguous_c=c, is_contiguous_f=f,
                                       is_contiguous_any=c or f))


def numba_type(value):
    if isinstance(value, NumbaView):
        a = value.array
        layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
        return nbtypes.Array(numpy_support.from_dtype(a.dtype), len(a.shape), layout)
    return typeof(value)


def numba_parameters(ty, value):
    out, compiled = [], SimpleNamespace(extensions=[])
    _Kernel._prepare_args(compiled, ty, value, 0, [], out)
    return cuda_launch.comparable_parameters(out)


@pytest.mark.parametrize("host", [
    np.zeros((3, 4)), np.zeros(7, dtype=np.int32), np.zeros((5, 2, 3), dtype=np.uint8),
    np.zeros((6, 4), dtype=np.int64)[:, 1], np.zeros((4, 6), dtype=np.float32)[1:3], np.zeros((0, 3)),
    np.asfortranarray(np.zeros((3, 4))),
], ids=["2d", "1d", "3d", "column", "rows", "empty", "fortran"])
def test_array_parameters_equal_numba_cudas(host):
    array = DeviceArray(host)
    view = NumbaView(array)
    assert array_parameters(array) == numba_parameters(numba_type(view), view)


@pytest.mark.parametrize("ty, value, convert", [
    (nbtypes.int64, 5, "c_int64"), (nbtypes.uint64, 2**64 - 3, "c_uint64"), (nbtypes.int32, -4, "c_int32"),
    (nbtypes.float64, 0.25, "c_double"), (nbtypes.float32, 0.5, "c_float"),
])
def test_scalar_parameters_equal_numba_cudas(ty, value, convert):
    import ctypes

    assert cuda_launch.comparable_parameters([getattr(ctypes, convert)(value)]) == numba_parameters(ty, value)


def test_argument_keys_separate_what_numba_types_apart():
    assert argument_key(3) != argument_key(2**63)  # int64 and uint64
    assert argument_key(True) != argument_key(1)
    assert argument_key(1.0) != argument_key(np.float32(1.0))
    assert argument_key(np.zeros(3)) is None  # a host array: numba-cuda copies it
    assert argument_key("x") is None
    c, f = DeviceArray(np.zeros((3, 4))), DeviceArray(np.asfortranarray(np.zeros((3, 4))))
    assert argument_key(c) != argument_key(f)
    assert argument_key(c) == argument_key(DeviceArray(np.ones((5, 2))))


class FakeDispatcher:
    """A compiled kernel of two arrays and three scalars, launched through 'numba-cuda' by recording."""

    def __init__(self):
        self.numba_calls = []
        arg_types = (nbtypes.Array(nbtypes.float64, 2, "C"), nbtypes.Array(nbtypes.int32, 1, "C"),
                     nbtypes.int64, nbtypes.float64, nbtypes.boolean)
        compiled = SimpleNamespace(argument_types=arg_types, debug=False, cooperative=False, extensions=[],
                                   _codelibrary=SimpleNamespace(get_cufunc=lambda: SimpleNamespace(kernel="k")))
        compiled._prepare_args = functools.partial(_Kernel._prepare_args, compiled)
        self.overloads = {arg_types: compiled}
        self._launch_config_sensitive = False

    def typeof_pyval(self, value):
        return numba_type(value)

    def __getitem__(self, config):
        return lambda *views: self.numba_calls.append((config, views))


def test_a_kernels_later_launches_go_straight_to_cuda_core(monkeypatch):
    direct = []
    monkeypatch.setattr(Launcher, "_launch", lambda self, *a: direct.append(a))
    launcher, dispatcher = Launcher(), FakeDispatcher()

    def launch(args):
        def through_numba():
            views = tuple(NumbaView(a) if isinstance(a, DeviceArray) else a for a in args)
            dispatcher[8, 32, "stream", 0](*views)
            return views
        launcher(dispatcher, 8, 32, "stream", 0, args, through_numba)

    x, rows = DeviceArray(np.zeros((10, 3))), DeviceArray(np.zeros(10, dtype=np.int32), ptr=0x7F00_0000_9000)
    launch((x, rows, 4, 0.5, True))
    assert len(dispatcher.numba_calls) == 1 and not direct
    launch((x, rows, 6, 0.25, False))
    assert len(dispatcher.numba_calls) == 1
    kernel, blocks, threads, stream, shared, params = direct[0]
    assert (kernel, blocks, threads, stream, shared) == ("k", 8, 32, "stream", 0)
    views = (NumbaView(x), NumbaView(rows), 6, 0.25, False)
    want = sum((numba_parameters(t, v) for t, v in zip(dispatcher.overloads[next(iter(dispatcher.overloads))]
                                                         .argument_types, views)), [])
    assert cuda_launch.comparable_parameters(params) == want
    # another kind of argument (a float32 array) goes through numba-cuda again (here: not compiled for it)
    launch((DeviceArray(np.zeros((10, 3), dtype=np.float32)), rows, 6, 0.25, False))
    assert len(dispatcher.numba_calls) == 2 and len(direct) == 1


def test_parameters_unlike_numba_cudas_raise(monkeypatch):
    monkeypatch.setattr(cuda_launch, "array_parameters", lambda a: [0, 0, 1, 8, 0, 1, 8])
    launcher, dispatcher = Launcher(), FakeDispatcher()
    x, rows = DeviceArray(np.zeros((10, 3))), DeviceArray(np.zeros(10, dtype=np.int32))
    args = (x, rows, 4, 0.5, True)
    with pytest.raises(RuntimeError, match="differ from numba-cuda's"):
        launcher(dispatcher, 1, 32, "s", 0, args,
                 lambda: tuple(NumbaView(a) if isinstance(a, DeviceArray) else a for a in args))
