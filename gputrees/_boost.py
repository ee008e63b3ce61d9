"""The boosting loop: rounds of Newton trees over a row set, as XGBoost's ``training.train`` or LightGBM's
``engine.train``.

:func:`boost` runs a fit's rounds: each round draws its row subsample and
its trees' features from the round's generator, has the row set grow the
round's K trees and add their values to the raw predictions
(:meth:`RowRounds.round`), scores the validation sets, reports the step
(progress, callbacks) and applies early stopping. Every boosting fit runs
it: :class:`gputrees.GradientBoostingClassifier` and its regressor over
rows beside the data (:class:`LocalRounds`), the Dask estimators over rows
on their workers (:mod:`gputrees.dask`); a kernel set's compiled rounds
(``FastPaths.boost_rounds``) are how :class:`LocalRounds` grows a round when
they cover the fit.

A round ``r`` of a fit seeded ``s`` draws from ``numpy.random.default_rng([s,
r])`` (made on its first use, :class:`RoundGenerator`): first the in-bag
rows (:func:`round_inbag`), then the trees' features
(:func:`round_tree_features`), then the grower's draws. So a fit draws the
same numbers whether its rows are local or spread over workers, and a
round's draws do not depend on the rounds before it.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import _backend
from ._criteria import Newton
from ._grower import grow
from ._predictor import predict_raw
from ._progress import Step
from ._records import GrowerInputs, Round
from .kernels import quantisation_scale, quantise, reference
from .kernels.reference import gather_node_values, round_channels

__all__ = [
    "boost", "BoostPlan", "BoostHistory", "EarlyStopping", "EvalSet", "LocalRounds", "RoundGenerator", "leaf_values",
    "round_draws", "round_inbag", "round_tree_features",
]


class RoundGenerator:
    """A round's random generator, ``np.random.default_rng([seed, round])``, made on its first use.

    Most rounds draw nothing (no row or column subsample, a grower that
    searches every feature); making the generator (a seed sequence hashed,
    a bit generator seeded) would be a noticeable share of a small data
    set's round. Attributes are the generator's; the draws are the
    generator's, in the same order.
    """

    __slots__ = ("_key", "_generator")

    def __init__(self, seed: int, round_index: int):
        self._key = [seed, round_index]
        self._generator = None

    def __getattr__(self, name):
        if name in RoundGenerator.__slots__:  # not set yet (a copy being made): no generator to ask
            raise AttributeError(name)
        generator = self._generator
        if generator is None:
            generator = self._generator = np.random.default_rng(self._key)
        return getattr(generator, name)


def round_inbag(round_rng, n: int, n_sub: int):
    """In-bag indicator (n,) float64 (host) of a round's row subsample, or None without subsampling.

    Draws from ``round_rng`` (the round's generator), so the draws after it
    (column samples, the grower's) follow the same stream on every machine.
    """
    if n_sub >= n:
        return None
    inbag = np.zeros(n, dtype=np.float64)
    inbag[round_rng.choice(n, size=n_sub, replace=False)] = 1.0
    return inbag


def round_tree_features(round_rng, k: int, n_features: int, n_col: int):
    """Features (K, n_features) bool each tree of the round may use, or None (all)."""
    if n_col >= n_features:
        return None
    tree_features = np.zeros((k, n_features), dtype=bool)
    for t in range(k):
        tree_features[t, round_rng.choice(n_features, size=n_col, replace=False)] = True
    return tree_features


def round_draws(plan, it: int):
    """Round ``it``'s generator, in-bag rows and trees' features, drawn in the fit's order (the module's
    docstring): the same on the client and on a Dask worker that grows the round (``plan``: :class:`BoostPlan`)."""
    round_rng = RoundGenerator(plan.seed, it)
    inbag = round_inbag(round_rng, plan.n_rows, plan.n_sub)
    return round_rng, inbag, round_tree_features(round_rng, plan.n_trees, plan.n_features, plan.n_col)


def leaf_values(xp, kernels, loss, criterion, batch, raw, y, w):
    """Unscaled values (K, n_nodes) of a round's trees (0 at internal nodes).

    Newton's ``-G / (H + l2)``, or where the loss re-estimates its leaves
    (absolute error, quantile, Huber) the loss's estimates from the rows'
    residuals (``raw``, ``y``, ``w``: unused otherwise); clipped to the
    nodes' monotonic bounds where the batch has them.
    """
    values = criterion.leaf_value(xp, batch.stats)
    if loss.needs_leaf_update:
        n_nodes = int(batch.left.shape[1])
        # (a batch grown over rows elsewhere, gputrees.dask's, has no row leaves here: its loss reads them there)
        leaf = None if batch.row_leaf is None else batch.row_leaf[0, :]
        values = loss.leaf_estimates(xp, kernels, leaf, raw, y, w, n_nodes)[None, :]
    if batch.lower is not None:
        values = xp.clip(values, batch.lower, batch.upper)
    return xp.where(batch.left < 0, values, xp.zeros_like(values))


@dataclasses.dataclass(frozen=True)
class BoostPlan:
    """What the loop needs of a fit: its size, its seed and its sampling.

    Attributes
    ----------
    n_rounds : int
        The rounds the fit ends with (``n_estimators``), counting those
        already in the history (``warm_start``).
    seed : int
        The rounds' generators' seed (see the module's docstring).
    n_rows, n_sub : int
        Training rows, and the in-bag rows a round draws (``n_sub >= n_rows``: no subsample).
    n_features, n_col : int
        Features, and the features a tree may use (``n_col >= n_features``: all).
    n_trees : int
        Trees a round (K: one per class for multi-class log-loss, else 1).
    """

    n_rounds: int
    seed: int
    n_rows: int
    n_sub: int
    n_features: int
    n_col: int
    n_trees: int


@dataclasses.dataclass
class BoostHistory:
    """A fit's rounds and scores so far (the loop appends to them).

    Attributes
    ----------
    rounds : list of Round
    train_scores : list of float
        The negated training loss before any round, then after each.
    val_scores : list of lists of float
        The early-stopping score (greater is better: minus the loss by default) of each validation set, before
        any round, then after each.
    val_metrics : list of lists of tuples
        Every metric's value (:class:`gputrees.metrics.EvalScoring`) of each validation set, at the same steps.
    """

    rounds: list
    train_scores: list
    val_scores: list
    val_metrics: list = dataclasses.field(default_factory=list)

    def truncate(self, n_rounds: int) -> None:
        """Keep the first ``n_rounds`` rounds and their scores (each list one longer: the baseline's)."""
        del self.rounds[n_rounds:]
        for steps in (self.train_scores, *self.val_scores, *self.val_metrics):
            del steps[n_rounds + 1:]


#: Rounds whose device scores early stopping reads at once (the stopping round is the same; at most this many
#: minus one rounds are grown past it and dropped).
STOP_CHECK_ROUNDS = 8


def _on_host(score) -> bool:
    """Whether a score is read at no cost: a number or a NumPy array (not a device array)."""
    return isinstance(score, (float, int, np.generic, np.ndarray))


def _read_scores(scores, start: int) -> None:
    """The device scores among ``scores[start:]`` (0-d arrays of one namespace) replaced by floats, read at once."""
    unread = [i for i in range(start, len(scores)) if not _on_host(scores[i])]
    if not unread:
        return
    xp = _backend.namespace_of(*(scores[i] for i in unread))
    values = _backend.to_numpy(xp.stack([xp.asarray(scores[i]) for i in unread]))
    for i, v in zip(unread, values):
        scores[i] = float(v)


@dataclasses.dataclass(frozen=True)
class EarlyStopping:
    """scikit-learn's rule: stop when none of the last ``n_iter_no_change`` validation scores beat the one before
    them by ``tol``."""

    n_iter_no_change: int
    tol: float
    verbose: int = 0

    def should_stop(self, scores) -> bool:
        m = self.n_iter_no_change
        if len(scores) <= m:
            return False
        reference_score = scores[-m - 1] + self.tol
        return not any(s > reference_score for s in scores[-m:])


class EvalSet:
    """A validation set scored after every round: its rows' raw predictions kept and updated by each round's trees.

    Parameters
    ----------
    xp : array namespace
    X : array of shape (n, n_features)
        Prediction-encoded rows (``BinMapper.encode_for_predict``).
    y, w : arrays of shape (n,), float64
        Encoded targets and weights.
    raw : array of shape (n, K), float64
        The raw predictions of the rounds fitted so far.
    missing_bin : int
    n_jobs : int or None
    """

    def __init__(self, xp, X, y, w, raw, missing_bin: int, n_jobs):
        self.xp, self.X, self.y, self.w, self.raw = xp, X, y, w, raw
        self.missing_bin, self.n_jobs = missing_bin, n_jobs

    def evaluate(self, scoring):
        """Every metric's value on the current raw predictions (:meth:`gputrees.metrics.EvalScoring.evaluate`:
        the built-in metrics' are 0-d arrays of the fit's namespace, not read)."""
        return scoring.evaluate(self.xp, self.raw, self.y, self.w)

    def add(self, batch, values) -> None:
        """Add a round's trees (``values`` (K, n_nodes), learning rate included) to the raw predictions."""
        self.raw = predict_raw(self.xp, batch, values, self.X, self.missing_bin, self.raw, self.n_jobs)


def boost(rows, loss, plan: BoostPlan, history: BoostHistory, evals=(), monitor=None, snapshot=None,
          early_stopping: EarlyStopping | None = None, scoring=None):
    """Run a fit's rounds from ``len(history.rounds)`` to ``plan.n_rounds``.

    Parameters
    ----------
    rows : row set of the rounds
        Grows a round's trees and updates the training rows' raw predictions
        (:meth:`LocalRounds.round`; :class:`gputrees.dask` has its own),
        gives the context the rounds run in (``workspace()``) and makes the
        checks left to the fit's end (``close()``).
    loss : Loss
    plan : BoostPlan
    history : BoostHistory
        Appended to: each round and its scores.
    evals : sequence of EvalSet
        Scored after every round with ``scoring`` (``history.val_metrics`` and
        ``history.val_scores``, one list each).
    monitor : gputrees._progress.Monitor or None
        Progress display and callbacks; a callback returning True ends the fit.
    snapshot : callable or None
        ``snapshot(n_rounds)``: the model of the first rounds (a callback's ``model``).
    early_stopping : EarlyStopping or None
        Watches the last validation set's scores.
    scoring : gputrees.metrics.EvalScoring or None
        The validation metrics (needed with ``evals``).

    Returns
    -------
    int or None
        The round at which early stopping ended the fit, else None.
    """
    stopped_at = None
    pending = 0  # rounds whose early-stopping check waits for their scores' read
    read = 0  # the early-stopping scores read so far
    with rows.workspace():
        for it in range(len(history.rounds), plan.n_rounds):
            round_rng, inbag, tree_features = round_draws(plan, it)
            batch, values, train_loss = rows.round(it, round_rng, inbag, tree_features)
            history.rounds.append(Round(batch=batch, values=values))
            history.train_scores.append(-train_loss)
            for ev, scores, metrics in zip(evals, history.val_scores, history.val_metrics):
                ev.add(batch, values)
                metrics.append(ev.evaluate(scoring))
                scores.append(scoring.score(metrics[-1]))
            if monitor is not None:
                n = len(history.rounds)
                model = functools.partial(snapshot, n) if snapshot is not None else None
                val = history.val_scores[-1][-1] if history.val_scores else None
                if monitor.step(Step(it, n, history.train_scores[-1], val, model)):
                    break
            if early_stopping is not None:
                scores = history.val_scores[-1]
                # device scores are read a few rounds at a time (each read waits for the device), the rounds
                # checked in order; a stop found late drops the rounds grown after it
                quiet = monitor is None or not monitor.reads_steps
                if quiet and not _on_host(scores[-1]) and it + 1 < plan.n_rounds and pending + 1 < STOP_CHECK_ROUNDS:
                    pending += 1
                    continue
                _read_scores(scores, read)
                read = len(scores)
                first, pending = it - pending, 0
                stopped_at = next((j for j in range(first, it + 1)
                                   if early_stopping.should_stop(scores[: len(scores) - (it - j)])), None)
                if stopped_at is None:
                    continue
                history.truncate(len(history.rounds) - (it - stopped_at))
                if monitor is not None:
                    monitor.close()  # the bar ends before the message
                if int(early_stopping.verbose) > 0:
                    print(
                        f"early stopping after round {stopped_at + 1}: no validation improvement for "
                        f"{early_stopping.n_iter_no_change} rounds",
                        flush=True,
                    )
                break
    if monitor is not None:
        monitor.close()
    rows.close()
    return stopped_at


#: Codes compared at once by :func:`_has_code` (the comparison's bool array: 16 MiB)
CODE_CHECK_BLOCK = 1 << 24


def _has_code(xp, codes, code: int) -> bool:
    """Whether any entry of ``codes`` (n, F) is ``code``, compared in blocks of rows (the bool array of the
    whole comparison would be as large as the codes)."""
    n, f = int(codes.shape[0]), int(codes.shape[1])
    step = max(1, CODE_CHECK_BLOCK // max(1, f))
    # (stops within the axis: the array API leaves slices past the end unspecified)
    return any(bool(xp.any(codes[s : min(n, s + step), :] == code)) for s in range(0, n, step))


class LocalRounds:
    """The training rows of a fit on this machine, and how a round grows its trees over them.

    A round computes the rows' gradients and hessians (unless the last round
    end made them), quantises them where the fit asks, grows the round's
    trees (:func:`gputrees._grower.grow`), takes their leaf values and adds
    them to the raw predictions, ending with the next round's channels where
    no row subsample is drawn (the kernel set's ``round_end``). Where the
    kernel set's compiled rounds cover the fit (``FastPaths.boost_rounds``:
    one tree a round, every row and feature, no quantisation), the first
    round makes them and every round runs as their few compiled calls, with
    the same trees, values and losses bit for bit.

    Parameters
    ----------
    xp : array namespace
    kernels : Kernels
    loss : Loss
    criterion : Newton
    params : GrowerParams
    codes : array of shape (n, n_features)
        The binned training rows.
    bin_mapper : BinMapper
    y, w : arrays of shape (n,), float64
        Encoded targets and sample weights.
    raw : array of shape (n, K), float64
        The raw predictions of the rounds fitted so far.
    learning_rate : float
    monotonic_cst : ndarray or None
    quantised : bool
        Quantise each round's gradients (:mod:`gputrees.kernels._quantise`).
    compiled_rounds : bool
        Whether the fit may run its rounds as the kernel set's compiled rounds
        (no row or column subsample, one tree a round, not quantised).
    codes_by_feature : array of shape (n_features, n) or None
        ``codes`` feature-major for the routing (``Kernels.feature_major``);
        made here when None.
    """

    def __init__(self, xp, kernels, loss, criterion: Newton, params, codes, bin_mapper, y, w, raw, learning_rate: float,
                 monotonic_cst=None, quantised: bool = False, compiled_rounds: bool = False, codes_by_feature=None):
        self.xp, self.kernels, self.loss, self.criterion, self.params = xp, kernels, loss, criterion, params
        self.codes, self.bin_mapper, self.y, self.w, self.raw = codes, bin_mapper, y, w, raw
        self.learning_rate, self.monotonic_cst, self.quantised = float(learning_rate), monotonic_cst, quantised
        self.compiled_rounds = compiled_rounds
        # the routing's feature-major copy, once per fit (not per round)
        self.codes_by_feature = kernels.feature_major(xp, codes) if codes_by_feature is None else codes_by_feature
        # two-channel histograms ([G, H], see gputrees._grower.Grower) where no
        # training value is missing; quantised kernels scale every channel
        self.count_free = not quantised and not _has_code(xp, codes, bin_mapper.missing_bin)
        self.table = None  # the channel table, written over every round (round_channels)
        self.table_sums = None  # its column sums, where the round end made them
        self.ahead = False  # whether ``table`` holds the channels of ``raw``
        self.runner = None  # the compiled rounds, made at the fit's first round
        self.quantiser = None  # the device's quantisation (FastPaths.quantiser), made at the first round

    def close(self):
        """The checks the rounds left to the fit's end (one host read): every device quantisation's scales."""
        failure = None if self.quantiser is None else self.quantiser.failure()
        if failure is not None:
            raise ValueError(failure)

    def workspace(self):
        """The kernels' workspace: their work buffers kept for every round's tree (``Kernels.workspace``)."""
        return self.kernels.workspace()

    def round(self, it: int, round_rng, inbag, tree_features):
        """Grow round ``it``'s trees and add them to the raw predictions.

        Returns
        -------
        batch : TreeBatch
        values : array of shape (K, n_nodes), float64
            The values the trees add (learning rate included).
        train_loss : float or 0-d array
            The weighted mean training loss after the round (on the device:
            read when the fit ends, or when a display or callback asks).
        """
        if self.runner is not None:
            return self._compiled_round()
        xp, loss = self.xp, self.loss
        count = None if inbag is None else _backend.from_numpy(xp, inbag)
        if not self.ahead:
            g, h = loss.gradients(xp, self.raw, self.y, self.w)
            self.table = round_channels(xp, g, h, count, self.table)
            self.table_sums = None
        channels, kernels, grow_kernels = self.table, self.kernels, self.kernels
        if self.quantised:
            # with the GPU's device step the scale stays on the device, its
            # failure read when the fit ends; elsewhere it is read each round
            if kernels.fixed_point and kernels.fast.grows_trees:
                if self.quantiser is None:
                    self.quantiser = kernels.fast.quantiser(xp, int(channels.shape[-1]))
                scale = self.quantiser(channels, int(self.codes.shape[0]))  # the table quantised in place
            else:
                scale = quantisation_scale(xp, channels, int(self.codes.shape[0]))
                channels = quantise(xp, channels, scale)
            grow_kernels = kernels.quantised(scale)
        inputs = GrowerInputs(
            codes=self.codes,
            channels=channels,
            multiplicity=None,
            bin_mapper=self.bin_mapper,
            criterion=self.criterion,
            kernels=grow_kernels,
            rng=round_rng,
            tree_features=tree_features,
            record_leaves=True,
            monotonic_cst=self.monotonic_cst,
            codes_by_feature=self.codes_by_feature,
            count_free_histograms=self.count_free,
            unit_count_channel=count is None and not self.quantised,
            channel_sums=None if self.quantised else self.table_sums,
        )
        if self.compiled_rounds:
            self.compiled_rounds = False  # (tried once, at the fit's first round)
            self.runner = kernels.fast.boost_rounds(xp, inputs, self.params, loss, self.learning_rate, self.y, self.w)
            if self.runner is not None:
                return self._compiled_round()
        batch = grow(xp, inputs, self.params)
        w_round = self.w if count is None else self.w * count
        values = self.learning_rate * leaf_values(xp, kernels, loss, self.criterion, batch, self.raw, self.y, w_round)
        if count is None:
            # quantised fits promise the same model, train_score_ included, on
            # every kernel set: the reference's end, whose loss sums are NumPy's
            end = reference.round_end if self.quantised else kernels.round_end
            self.raw, train_loss, self.table, self.table_sums = end(xp, loss, self.raw, values, batch.row_leaf, self.y,
                                                                    self.w, self.table)
            self.ahead = True
        else:
            leaves = xp.permute_dims(batch.row_leaf, (1, 0))  # (n, K)
            self.raw = self.raw + gather_node_values(xp, values, leaves)
            train_loss = loss.mean_loss(xp, self.raw, self.y, self.w)
        return dataclasses.replace(batch, row_leaf=None), values, train_loss

    def _compiled_round(self):
        batch, values, self.raw, train_loss, self.table, self.table_sums = self.runner(self.raw, self.table,
                                                                                       self.table_sums)
        self.ahead = True
        return batch, values, train_loss
