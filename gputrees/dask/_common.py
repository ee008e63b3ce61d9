"""What the Dask estimators share: the client, signatures, binning, prediction."""

from __future__ import annotations

import inspect

import numpy as np

from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted

from .. import _backend
from .._binning import BIN_SUBSAMPLE, BIN_SUBSAMPLE_SEED, bin_mapper_from_summaries
from .._state import transactional_fit
from .._validation import resolve_categorical
from ._cluster import make_shards


def get_client():
    """The Dask client of the caller (``distributed.get_client``), with a clear error if none."""
    from distributed import get_client as _get

    try:
        return _get()
    except ValueError as exc:
        raise ValueError(
            "gputrees.dask estimators need a Dask client: create one first, "
            "e.g. `from distributed import Client; client = Client()`"
        ) from exc


def dask_signature(base, defaults=None, extra=None):
    """An ``__init__`` for a Dask subclass of ``base``: its parameters, some defaults changed, some added.

    scikit-learn reads an estimator's parameters from the signature of its
    ``__init__``; the returned function carries ``base``'s keyword-only
    parameters (with ``defaults`` replacing theirs) followed by ``extra``, and
    stores every argument as an attribute of the same name, as scikit-learn
    requires.
    """
    defaults = dict(defaults or {})
    extra = dict(extra or {})
    sig = inspect.signature(base.__init__)
    params = [sig.parameters["self"]]
    for p in list(sig.parameters.values())[1:]:
        params.append(p.replace(default=defaults.get(p.name, p.default)))
    for name, value in extra.items():
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value))
    new_sig = sig.replace(parameters=params)
    names = [p.name for p in params[1:]]

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments {unknown}")
        bound = new_sig.bind(self, **kwargs)
        bound.apply_defaults()
        for name in names:
            setattr(self, name, bound.arguments[name])

    __init__.__signature__ = new_sig
    return __init__


def fit_bins(shards, n_total: int, max_bins: int, n_features: int, is_categorical=None):
    """Global bin edges from the shards' summaries (see :func:`bin_mapper_from_summaries`).

    Each shard sends the distinct values of its features when it has at most
    ``max_bins`` of them, and a uniform sample of its rows in proportion to its
    size (:data:`~gputrees._binning.BIN_SUBSAMPLE` rows in all, as the
    single-machine fit samples). A feature whose union of distinct values stays
    within ``max_bins`` is binned exactly, like the single-machine fit; a
    categorical feature (``is_categorical``) must have that few categories.
    """
    answers = []
    for i, n_rows in enumerate(shards.n_rows):
        share = int(np.ceil(BIN_SUBSAMPLE * n_rows / n_total))
        answers.append((i, share))
    results = shards.call_each("bin_summary", [(max_bins, share, BIN_SUBSAMPLE_SEED + i) for i, share in answers])
    distinct = []
    for f in range(n_features):
        per = [r[0][f] for r in results]
        if any(d is None for d in per):
            distinct.append(None)
            continue
        u = np.unique(np.concatenate(per)) if per else np.zeros(0)
        distinct.append(u if u.shape[0] <= max_bins else None)
    sample = np.concatenate([r[1] for r in results], axis=0)
    xp = _backend.namespace_for(sample, None)
    if is_categorical is None:
        is_categorical = np.zeros(n_features, dtype=bool)
    return bin_mapper_from_summaries(xp, distinct, sample, is_categorical, max_bins)


def class_factors(class_weight, classes, counts):
    """Each class's ``class_weight`` factor, as :func:`sklearn.utils.class_weight.compute_sample_weight` gives
    it to the class's rows (``"balanced"``: ``n / (n_classes * count)``), from the global row counts."""
    if isinstance(class_weight, str):  # "balanced", the one string the parameter takes
        return int(counts.sum()) / (classes.shape[0] * counts.astype(np.float64))
    return compute_class_weight(class_weight, classes=classes, y=classes)


def scale_by_class(shards, per, class_weight, classes):
    """Scale every shard's rows by their class's ``class_weight`` factor (from the global row counts in
    ``per``, the shards' ``label_weights``); the shards' ``label_weights`` after it."""
    counts = np.zeros(classes.shape[0], dtype=np.int64)
    for labels, _, c in per:
        counts[np.searchsorted(classes, labels)] += c
    shards.call("scale_class_weights", class_factors(class_weight, classes, counts))
    return shards.call("label_weights")


def check_shards(shards):
    """Refuse infinite features and bad weights (each shard counts its own)."""
    for n, inf, bad_w in shards.call("describe"):
        if inf:
            raise ValueError("X contains infinity; gputrees treats only NaN as missing")
        if bad_w:
            raise ValueError("sample_weight has negative or non-finite values")


def map_predict(X, fn, n_out=None, dtype=np.float64, columns=None):
    """Apply ``fn`` (a function of an in-memory block) partition by partition, lazily.

    Parameters
    ----------
    X : dask array of shape (n, n_features) or dask dataframe
    fn : callable
        ``fn(block) -> ndarray`` of shape (n_block,) or (n_block, n_out).
    n_out : int or None
        Width of the output (None: 1-D output).
    dtype : dtype
        Of the output.
    columns : list or None
        Column names of a 2-D output for dataframe input.

    Returns
    -------
    dask array of shape (n,) or (n, n_out) for array input; a dask Series (1-D)
    or DataFrame (2-D) with ``X``'s index for dataframe input.
    """
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    if isinstance(X, dd.DataFrame):
        if n_out is None:
            meta = pd.Series(np.zeros(0, dtype=dtype))
            return X.map_partitions(lambda df: pd.Series(fn(df), index=df.index), meta=meta)
        cols = list(range(n_out)) if columns is None else list(columns)
        meta = pd.DataFrame(np.zeros((0, n_out), dtype=dtype), columns=cols)
        return X.map_partitions(lambda df: pd.DataFrame(fn(df), index=df.index, columns=cols), meta=meta)
    if not isinstance(X, da.Array):
        raise TypeError(f"expected a dask array or dataframe, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim}-D")
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    if n_out is None:
        return X.map_blocks(fn, drop_axis=1, dtype=dtype)
    return X.map_blocks(fn, chunks=(X.chunks[0], (n_out,)), dtype=dtype)


def to_local(a):
    """A dask collection computed into the client's memory; anything else as it is."""
    return a.compute() if is_dask_collection(a) else a


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a dask array or dataframe (without importing dask for other inputs)."""
    mod = type(X).__module__
    if not mod.startswith("dask"):
        return False
    import dask.array as da
    import dask.dataframe as dd

    return isinstance(X, (da.Array, dd.DataFrame))

class DaskEstimator:
    """What every Dask estimator does around its own ``_fit_shards``.

    Subclasses set ``_local_class`` (the single-machine estimator),
    ``_fitted_attr`` (an attribute only a fit sets) and define
    ``_check_dask_params()`` and ``_fit_shards(shards, n, n_features)``.
    """

    _local_class = None
    _fitted_attr = None

    @transactional_fit
    def fit(self, X, y, sample_weight=None):
        """Fit on the workers holding ``X``.

        Parameters
        ----------
        X : dask array of shape (n_samples, n_features), or dask dataframe
            Numeric; NaN marks missing values. NumPy or CuPy chunks. The rows
            stay on the workers that hold them.
        y : dask array of shape (n_samples,) or dask Series
        sample_weight : dask array of shape (n_samples,) or dask Series, optional

        Returns
        -------
        self
        """
        return self._fit_dask(X, y, sample_weight)

    def _fit_dask(self, X, y, sample_weight, **fit_params):
        """The fit: check, make the shards, ``_fit_shards(shards, n, n_features, **fit_params)``, close them."""
        self._validate_params()
        self._check_dask_params(**fit_params)
        shards, n, n_features, names, categories = make_shards(get_client(), X, y, sample_weight, self.n_jobs)
        try:
            check_shards(shards)
            self.n_features_in_ = n_features
            if names is not None:
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            # categorical features: a dataframe's category columns and the declared ones (as the local fit)
            self.is_categorical_ = np.zeros(n_features, dtype=bool)
            self._categories = [None] * n_features if categories is None else list(categories)
            for j, labels in enumerate(self._categories):
                self.is_categorical_[j] = labels is not None
            for j in resolve_categorical(self.categorical_features, n_features, names):
                self.is_categorical_[j] = True
            return self._fit_shards(shards, n, n_features, **fit_params)
        finally:
            self.exchanges_ = shards.log
            shards.close()

    def to_local(self):
        """The fitted model as the plain single-machine estimator (predict anywhere, save, load)."""
        check_is_fitted(self, self._fitted_attr)
        own = self.get_params()
        local = self._local_class(**{k: v for k, v in own.items() if k in self._local_class().get_params()})
        for key, value in vars(self).items():
            if key not in own and key != "exchanges_":
                setattr(local, key, value)
        return local

    def save_model(self, path):
        """Save as the plain single-machine model (``gputrees.load_model`` returns that estimator)."""
        return self.to_local().save_model(path)

    def _dask_or_local(self, method, X, n_out=None, dtype=np.float64, columns=None):
        """``method`` of the local model: directly on in-memory ``X``, lazily per partition on dask input."""
        if not is_dask_collection(X):
            return getattr(super(), method)(X)
        return map_predict(X, getattr(self.to_local(), method), n_out, dtype, columns)
