"""Quantised (fixed-point) channels: sums that do not depend on their order.

Gradient boosting's gradients and hessians (sample weights folded in) are
rounded, once per round, to integer multiples of ``1 / scale[c]``, one scale
per channel, chosen from the largest absolute value as XGBoost's GPU
histograms do (since 2021):

    scale[c] = 2 ** (52 - e),   where  n_rows * max_i |chan[i, c]| = f * 2 ** e,  0.5 <= f < 1

(``math.frexp``), i.e. the largest power of two with ``n_rows * max|chan| *
scale < 2 ** 52``; a channel that is all zero gets ``scale = 1``, and the
exponent is capped at 1000 (below, an error: values near 2 ** 1000) so that
``scale`` and ``1 / scale`` are normal float64 numbers. ``n_rows`` bounds the rows of one tree (with
multiplicities: their total), so every sum a fit forms over one tree's
rows, histogram bins, node sums, their differences and running sums, is an
integer ``q`` times ``1 / scale`` with ``|q| <= 2 ** 52 + n_rows / 2 <
2 ** 53``:

* the cuda kernels add the integers ``q`` in int64 (10 bits of headroom
  below int64's 2 ** 63): integer atomics are associative, so a GPU fit is
  bit-identical run after run;
* the CPU kernels (numba, bincount, reference) add the float64 values: every
  partial sum is exactly representable (an integer below 2 ** 53 times a
  power of two), so float64 addition makes no rounding and gives the same
  numbers, bit for bit, as the int64 sums, in any order.

Hence a fit with quantisation gives the same model on every kernel set.
Precision: a value moves by at most ``0.5 / scale <= n_rows * max|chan| *
2 ** -52``, a relative ``n_rows * 2 ** -52`` of the largest one (2e-9 for
10 million rows); XGBoost keeps about the same (62-bit fixed point over the
sum of absolute values).
"""

from __future__ import annotations

import math

import numpy as np

from .._backend import to_numpy
from .rules import SCALE_BITS, quantisation_scale_of

__all__ = ["quantisation_scale", "quantise", "HostScale", "SCALE_BITS", "SCALE_FAILURE"]

#: Why a device quantisation (which cannot raise) failed, said when the fit ends.
SCALE_FAILURE = ("cannot quantise non-finite gradients or hessians, or gradients too large to quantise over the "
                 "rows")


def quantisation_scale(xp, channels, n_rows: int) -> tuple:
    """Power-of-two scale of every channel (see the module docstring; the rule:
    :func:`gputrees.kernels.rules.quantisation_scale_of`, which the GPU's quantisation kernel applies too).

    Parameters
    ----------
    channels : array of shape (..., n_channels), float64
        Finite values.
    n_rows : int
        Most rows (total multiplicity) summed into one tree's histograms.

    Returns
    -------
    tuple of n_channels floats

    One host synchronisation: the per-channel maxima are copied to the host,
    where the exact power of two is computed (``math.frexp``).
    """
    if n_rows < 1:
        raise ValueError(f"n_rows must be positive, got {n_rows}")
    n_channels = int(channels.shape[-1])
    flat = xp.reshape(channels, (-1, n_channels))
    if int(flat.shape[0]) == 0:
        return (1.0,) * n_channels
    big = to_numpy(xp.max(xp.abs(flat), axis=0))  # host synchronisation: the scale is a host value
    out = []
    for value in np.asarray(big, dtype=np.float64).tolist():
        if not math.isfinite(value):
            raise ValueError("cannot quantise non-finite gradients or hessians")
        scale = quantisation_scale_of(value, n_rows)
        if math.isnan(scale):
            raise ValueError(f"gradients up to {value:.3g} are too large to quantise over {n_rows} rows")
        out.append(scale)
    return tuple(out)


class HostScale:
    """A device array of scales read to the host the first time it is iterated (a sequence of floats).

    The device step takes the array as it is (and its ``inverse``, ``1 / scale``, where the quantisation
    made it); the level-wise kernels, which take host floats, read it once, when a round is grown by them.
    """

    def __init__(self, array, inverse=None):
        self.array = array
        self.inverse = inverse
        self._floats = None

    def _host(self):
        if self._floats is None:
            self._floats = tuple(float(s) for s in to_numpy(self.array))
        return self._floats

    def __iter__(self):
        return iter(self._host())

    def __len__(self):
        return int(self.array.shape[0])


def quantise(xp, channels, scale):
    """``channels`` rounded to the nearest multiple of ``1 / scale`` (per channel, ties to even).

    Parameters
    ----------
    channels : array of shape (..., n_channels), float64
    scale : sequence of n_channels powers of two

    Returns
    -------
    array like ``channels``, float64: every value times its ``scale`` is an integer
    """
    if isinstance(scale, HostScale):
        scale = scale.array
    s = xp.asarray(scale, dtype=xp.float64) if hasattr(scale, "shape") else xp.asarray(list(scale), dtype=xp.float64)
    # both products are exact (powers of two, no overflow by the choice of scale)
    return xp.round(channels * s) * (1.0 / s)
