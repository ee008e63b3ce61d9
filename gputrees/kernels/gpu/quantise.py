"""A boosting round's channels quantised on the device: two launches, no host read.

:class:`DeviceQuantiser` (one a fit, the cuda set's ``FastPaths.quantiser``)
quantises a round's channel table (K, n, C) in place, as
:func:`gputrees.kernels._quantise.quantisation_scale` and
:func:`gputrees.kernels._quantise.quantise` do on the host: ``_channel_max``
takes every channel's largest absolute value (a block's maximum in shared
memory, then one atomic a block and channel), ``_quantise`` makes each
channel's scale by the same rule
(:func:`gputrees.kernels.rules.quantisation_scale_of`) and rounds every value
to the nearest multiple of ``1 / scale`` (ties to even, the sign of a zero
kept, as ``numpy.round``). The scales stay on the device; a channel without
one (non-finite values, values too large) marks a failure flag that
:meth:`DeviceQuantiser.failure` reads once, when the fit ends.
"""

from __future__ import annotations

import math

import numba
from numba import cuda

from .. import rules
from .._cuda import grid_blocks, launch, launch_config
from .._quantise import SCALE_FAILURE, HostScale
from .rules import compile_rules

__all__ = ["DeviceQuantiser", "MAX_CHANNELS", "MAX_BLOCKS"]

#: Most channels quantised here (the kernels' per-thread arrays are this long).
MAX_CHANNELS = 16
#: Most blocks of the maximum's launch: each adds one atomic a channel.
MAX_BLOCKS = 1024


@cuda.jit
def _channel_max(chan, big):
    """``big[c]`` (starting at 0) raised to the largest ``|chan[k, r, c]|`` (NaN counted as infinite: a
    failure either way), a block's maximum taken in shared memory first."""
    part = cuda.shared.array(MAX_CHANNELS, numba.float64)
    local = cuda.local.array(MAX_CHANNELS, numba.float64)
    n_trees, n, C = chan.shape
    tid = cuda.threadIdx.x
    for c in range(tid, C, cuda.blockDim.x):
        part[c] = 0.0
    for c in range(C):
        local[c] = 0.0
    cuda.syncthreads()
    for i in range(cuda.grid(1), n_trees * n, cuda.gridsize(1)):
        k = i // n
        r = i - k * n
        for c in range(C):
            a = abs(chan[k, r, c])
            if a != a:
                a = math.inf
            if a > local[c]:
                local[c] = a
    for c in range(C):
        cuda.atomic.max(part, c, local[c])
    cuda.syncthreads()
    for c in range(tid, C, cuda.blockDim.x):
        cuda.atomic.max(big, c, part[c])


@cuda.jit
def _quantise(chan, big, other, n_rows, scales, failed):
    """Every value rounded to a multiple of ``1 / scale`` of its channel (the scale from ``big``), in place;
    ``scales`` (2, C): the scales and their inverses; ``failed[0]`` set where a channel has no scale;
    ``other`` (the next round's maxima) zeroed."""
    sc = cuda.local.array(MAX_CHANNELS, numba.float64)
    iv = cuda.local.array(MAX_CHANNELS, numba.float64)
    n_trees, n, C = chan.shape
    start = cuda.grid(1)
    for c in range(C):
        sc[c] = rules.quantisation_scale_of(big[c], n_rows)
        iv[c] = 1.0 / sc[c]  # a power of two: exact
    if start < C:
        c = start
        scales[0, c] = sc[c]
        scales[1, c] = iv[c]
        other[c] = 0.0
        if sc[c] != sc[c]:
            failed[0] = 1
    for i in range(start, n_trees * n, cuda.gridsize(1)):
        k = i // n
        r = i - k * n
        for c in range(C):
            s = sc[c]
            if s == s:
                v = chan[k, r, c]
                # round() ties to even; copysign keeps numpy.round's sign of a zero
                chan[k, r, c] = math.copysign(round(v * s) * iv[c], v)


class DeviceQuantiser:
    """A fit's quantisation of its rounds' channel tables on the device (see the module docstring).

    Parameters
    ----------
    xp : array namespace (CuPy, or NumPy under the simulator)
    n_channels : int
    """

    def __init__(self, xp, n_channels: int):
        if not 1 <= n_channels <= MAX_CHANNELS:
            raise ValueError(f"the device quantises 1 to {MAX_CHANNELS} channels, got {n_channels}")
        self.maxima = xp.zeros((2, n_channels), dtype=xp.float64)  # this round's, and the next one's (zeroed)
        self.scales = xp.empty((2, n_channels), dtype=xp.float64)
        self.failed = xp.zeros(1, dtype=xp.int64)
        self.parity = 0

    def __call__(self, channels, n_rows: int) -> HostScale:
        """Quantise ``channels`` (K, n, C) float64 in place for trees of ``n_rows`` rows; returns their scales
        (device arrays, the fit's: the next round writes over them)."""
        if n_rows < 1:
            raise ValueError(f"n_rows must be positive, got {n_rows}")
        compile_rules()
        threads, cap_blocks = launch_config()
        work = int(channels.shape[0]) * int(channels.shape[1])
        now, after = self.maxima[self.parity], self.maxima[1 - self.parity]
        launch(_channel_max, grid_blocks(work, threads, min(cap_blocks, MAX_BLOCKS)), threads, channels, now)
        launch(_quantise, grid_blocks(work, threads, cap_blocks), threads, channels, now, after, int(n_rows),
               self.scales, self.failed)
        self.parity = 1 - self.parity
        return HostScale(self.scales[0], inverse=self.scales[1])

    def failure(self) -> str | None:
        """Why a round's quantisation failed, or None: one host read (the fit's flag)."""
        return SCALE_FAILURE if int(self.failed[0]) else None
