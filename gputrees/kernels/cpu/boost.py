"""A boosting fit's rounds in three compiled calls each (Numba), with no Python of the generic round between them.

A round of the boosting loop (:meth:`gputrees._boost.LocalRounds.round`)
builds its :class:`~gputrees._records.GrowerInputs`, asks the kernel set for
the compiled tree (:func:`gputrees.kernels.cpu.grow.grow_tree`: its
round's checks, the fit's cached inputs looked up, the call's arguments
assembled), computes the leaf values with the criterion's array operations,
scales them, and ends the round through
:func:`gputrees.kernels.cpu.loss.round_end` (its checks and
conversions). On small data that Python is about a tenth of the round,
while the other threads wait.

:class:`BoostRounds` makes all of that once per fit, for the case the
compiled tree and round end both cover (one tree a round, every row in,
every feature, the Newton criterion, squared error or binary log-loss
without a leaf update, no quantised gradients), and runs each round as the
tree (:class:`~gputrees.kernels.cpu.grow.TreeCall`), the leaf values
(:func:`_newton_leaf_values`) and the round end's passes
(:class:`~gputrees.kernels.cpu.loss.EndPasses`). It is not a second
algorithm: the same kernels on the same arrays, and the leaf values by the
generic path's operations in its order, so the trees, the values, the raw
predictions and the losses are the round-by-round path's bit for bit
(tested).
"""

from __future__ import annotations

import numba
import numpy as np

from ..._records import loss_code
from ..rules import newton_denominator, newton_value
from .grow import NO_SUMS, TreeCall, fixed_inputs, round_covered, tree_batch
from .jit import JIT, Threads
from .loss import EndPasses


@numba.njit(**JIT)
def _newton_leaf_values(stats, first_child, n_nodes, l2, learning_rate):
    """A round's node values (1, n_nodes) float64: ``learning_rate * -G / (H + l2)`` at leaves, 0 elsewhere.

    The generic path's operations in its order (``Newton.leaf_value``, its
    denominator 1 where ``H + l2 <= 0`` or NaN, then 0 at internal nodes,
    then the learning rate): ``stats`` (cap, 3) ``[n, G, H]``,
    ``first_child`` (cap,) int64, -1 at leaves.
    """
    out = np.empty((1, n_nodes))
    for i in range(n_nodes):
        v = newton_value(stats[i, 1], newton_denominator(stats[i, 2], l2))
        out[0, i] = learning_rate * (v if first_child[i] < 0 else 0.0)
    return out


class BoostRounds:
    """The rounds of one boosting fit, each in three compiled calls (see the module's docstring).

    Made by :func:`boost_rounds` inside the fit's workspace
    (``Kernels.workspace``), whose work buffers its tree call holds.

    Parameters
    ----------
    call : TreeCall
        The fit's tree call.
    end : EndPasses
        The fit's round-end passes.
    l2, learning_rate : float
    y, w : (n,) float64, C-contiguous
        Encoded targets and sample weights.
    """

    __slots__ = ("call", "end", "l2", "learning_rate", "y", "w", "row_leaf")

    def __init__(self, call: TreeCall, end: EndPasses, l2: float, learning_rate: float, y, w):
        self.call, self.end = call, end
        self.l2, self.learning_rate = l2, learning_rate
        self.y, self.w = y, w
        # every row's leaf, written by each round's tree (the batch keeps none)
        self.row_leaf = np.empty(call.n_rows, dtype=np.int64)

    def __call__(self, raw, table, sums):
        """One round: its tree from ``table``, then the raw predictions, the loss and the next channels.

        Parameters
        ----------
        raw : (n, 1) float64
            Raw predictions before the round (updated in place when
            C-contiguous float64, as ``Kernels.round_end`` does).
        table : (1, n, 3) float64, C-contiguous
            The round's channels ``[1, g, h]``; written over with the next
            round's.
        sums : (3,) float64 or None
            ``table``'s column sums where the last round end made them
            (the root's statistics), or None (the tree sums the rows).

        Returns
        -------
        batch : TreeBatch
            The round's tree (no ``row_leaf``).
        values : (1, n_nodes) float64
            Its node values, learning rate included.
        raw : (n, 1) float64
        loss : float
            The weighted mean loss of the new raw predictions.
        table : (1, n, 3) float64
            The next round's channels (the same array).
        sums : (3,) float64
            Their column sums.
        """
        if not (raw.flags.c_contiguous and raw.dtype == np.float64):
            raw = np.ascontiguousarray(raw, dtype=np.float64)
        call = self.call
        with Threads(call.threads):
            out = call(table[0], self.row_leaf, NO_SUMS if sums is None else sums)
            values = _newton_leaf_values(out[3], out[4], out[0], self.l2, self.learning_rate)
        loss, sums = self.end(raw[:, 0], values[0], self.row_leaf, self.y, self.w, table[0])
        return tree_batch(out, None), values, raw, loss, table, sums


def boost_rounds(xp, inputs, params, loss, learning_rate: float, y, w, *, n_threads: int = 1):
    """The fit's :class:`BoostRounds`, or None where a round is not covered (the fit then runs its rounds one
    step at a time).

    Parameters
    ----------
    xp : array namespace (NumPy)
    inputs : GrowerInputs
        The fit's first round's, whose ``channels`` (1, n, 3) table every
        round writes over; covered where :func:`gputrees.kernels.cpu.grow.covered`
        covers it, every row in (no multiplicities, ``channel_sums`` made by
        the round ends), and no feature drawn.
    params : GrowerParams
    loss : Loss
        A loss with a compiled round end (:func:`gputrees._records.loss_code`; one tree a
        round, no leaf update).
    learning_rate : float
    y, w : (n,) float64
        Encoded targets and sample weights (every row's weight, the rounds
        drawing no subsample).
    n_threads : int

    Returns
    -------
    BoostRounds or None
    """
    # (the loss classes with a compiled round end grow one tree a round and update no leaf)
    kind = loss_code(loss)
    table = inputs.channels
    if (
        kind is None
        or not isinstance(table, np.ndarray)
        or table.ndim != 3
        or table.shape[0] != 1
        or not table.flags.c_contiguous
        or not round_covered(xp, inputs, params)  # the criterion, no draws, the channels' form
    ):
        return None
    fixed = fixed_inputs(inputs, params)
    if not fixed.covered or table.shape[1] != fixed.codes.shape[0]:
        return None
    call = TreeCall.new(inputs, params, fixed, n_threads)
    end = EndPasses.new(kind, call.n_rows, n_threads)
    y = np.ascontiguousarray(y, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    return BoostRounds(call, end, float(inputs.criterion.l2), float(learning_rate), y, w)
