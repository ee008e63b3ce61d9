"""Input checks and conversions shared by the estimators.

Every bad input raises ValueError or TypeError with a message naming the
problem; nothing is silently dropped or changed.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import train_test_split
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from . import _backend, _sparse


# Ranges that keep the criteria's arithmetic finite and normal in float64
# (normal numbers span 2**-1022 .. 2**1024). The criteria square weighted
# sums (gini: sum_k c_k**2 / w**2; squared error: S**2 / w) and Friedman's
# score multiplies up to four of them ((w_r S_l - w_l S_r)**2 / (w_l w_r)), so
# total weights stay below 2**200 (4th power 2**800), positive weights above
# 2**-200 (squares stay normal) and max|y| * max(1, W)**2 below 2**400.
MAX_TOTAL_WEIGHT = 2.0**200
MIN_POSITIVE_WEIGHT = 2.0**-200
MAX_TARGET_SCALE = 2.0**400


def check_predict_columns(estimator, X) -> None:
    """scikit-learn's check of ``X``'s columns against the fit's (``validate_data(reset=False)``: their count and
    names, its errors and warnings), skipped for a DataFrame whose column names are the fit's, in order: the
    common case, where scikit-learn's conversion of the frame to read its names costs more than a small
    prediction."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None and _backend.is_dataframe(X) and list(X.columns) == names.tolist():
        return
    validate_data(estimator, X, reset=False, skip_check_array=True)


def check_class_labels(y) -> None:
    """scikit-learn's check that ``y`` holds class labels (``check_classification_targets``), skipped for a 1-D
    integer or boolean array, which it always accepts (binary or multi-class): its scan of ``y`` costs about
    0.15 ms, a tenth of a small tree's fit."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "biu":
        return
    check_classification_targets(y)


def _is_sparse(X) -> bool:
    if _backend.is_dataframe(X):
        return False  # (asking a DataFrame for ``sparse`` makes pandas check every column's dtype)
    return hasattr(X, "tocsr") or hasattr(X, "sparse") and hasattr(X, "format")


def resolve_categorical(categorical_features, n_features: int, feature_names) -> set:
    """Column positions declared categorical by the ``categorical_features`` parameter."""
    if categorical_features is None:
        return set()
    spec = np.asarray(categorical_features)
    if spec.ndim != 1:
        raise ValueError("categorical_features must be a 1-D list of indices, names or booleans")
    if spec.size == 0:
        return set()
    if spec.dtype == bool:
        if spec.shape[0] != n_features:
            raise ValueError(
                f"categorical_features as a boolean mask must have {n_features} entries, "
                f"got {spec.shape[0]}"
            )
        return set(np.flatnonzero(spec).tolist())
    if spec.dtype.kind in "iu":
        bad = [int(i) for i in spec if not 0 <= int(i) < n_features]
        if bad:
            raise ValueError(f"categorical_features indices {bad} out of range [0, {n_features})")
        return set(int(i) for i in spec)
    if spec.dtype.kind in "UO":
        if feature_names is None:
            raise ValueError(
                "categorical_features given as names needs X to be a DataFrame with column names"
            )
        names = list(feature_names)
        missing = [s for s in spec.tolist() if s not in names]
        if missing:
            raise ValueError(f"categorical_features names {missing} are not columns of X")
        return {names.index(s) for s in spec.tolist()}
    raise ValueError(
        "categorical_features must be None, or indices, column names or a boolean mask; "
        f"got dtype {spec.dtype}"
    )


def _encode_labels(col_values, labels):
    index = {v: i for i, v in enumerate(labels.tolist())}
    out = np.empty(len(col_values), dtype=np.float64)
    for i, v in enumerate(col_values):
        out[i] = index.get(v, np.nan) if not _backend._is_missing(v) else np.nan
    return out


def _category_codes(categorical) -> np.ndarray:
    """A pandas Categorical's codes as float64, NaN for missing (code -1)."""
    codes = np.asarray(categorical.codes)
    out = codes.astype(np.float64)
    out[codes < 0] = np.nan
    return out


def _encode_pandas(col, labels) -> np.ndarray:
    """Codes of a pandas column in the fit-time ``labels`` (NaN: missing or unseen), vectorised."""
    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype):
        categorical = col.array  # (its codes without the Series that ``col.cat.codes`` builds)
        categories = np.asarray(categorical.categories, dtype=object)
        if categories.shape == labels.shape and bool(np.all(categories == labels)):
            # the column's own codes are the fit's (the same categories in the same order, as at fit time):
            # no lookup of every value, which costs pandas milliseconds a column
            return _category_codes(categorical)
    try:
        codes = pd.Index(labels, dtype=object).get_indexer(col.astype(object))
    except (TypeError, ValueError):
        return _encode_labels(col.tolist(), labels)
    out = codes.astype(np.float64)
    out[codes < 0] = np.nan
    return out


def _string_categories(values) -> np.ndarray:
    present = sorted({v for v in values if not _backend._is_missing(v)}, key=lambda v: (str(type(v)), v))
    return np.asarray(present, dtype=object)


def _numpy_number(dtype) -> bool:
    """Whether a DataFrame column's dtype is a NumPy bool, integer or float one (no extension dtype, no
    missing-value marker other than NaN)."""
    return isinstance(dtype, np.dtype) and dtype.kind in "biuf"


def to_numeric_2d(X, xp, categorical_features, fitted_categories=None, fitted_names=None, keep_float32=False):
    """Convert ``X`` to a float64 array of namespace ``xp``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    xp : namespace the computation runs in
    categorical_features : parameter value (fit) or None (predict)
    fitted_categories : list, at predict
        Per feature: the labels of label-coded categorical features, else None.
    keep_float32 : bool, default=False
        A float32 array stays float32 instead of being copied to float64 (its
        values compare with float64 thresholds exactly as their float64 copies
        would); only for NumPy ``xp``.

    Returns
    -------
    Xd : array of shape (n_samples, n_features), float64 (or float32, see ``keep_float32``), in ``xp``
    is_categorical : ndarray of shape (n_features,), bool (meaningful at fit)
    categories : list of (ndarray or None)
        Labels of label-coded categorical features (strings, pandas categories).
    """
    fit = fitted_categories is None
    if _sparse.is_sparse(X):
        # kept sparse: binned from its columns' stored values (see gputrees._sparse)
        csr = _sparse.as_csr(X, xp, categorical_features if fit else None)
        return csr, np.zeros(csr.shape[1], dtype=bool), [None] * csr.shape[1]
    if _is_sparse(X):
        raise TypeError(f"{type(X).__name__} is not a scipy.sparse matrix; convert it to one or to a dense array")
    if fit:
        _check_fit_memory(X, xp)
    if _backend.is_dataframe(X):
        names = [str(c) for c in X.columns]
        n_features = X.shape[1]
        declared = resolve_categorical(categorical_features, n_features, names) if fit else set()
        is_cat = np.zeros(n_features, dtype=bool)
        categories = [None] * n_features
        dtypes = list(X.dtypes)  # (a Series pandas builds on every access: read once)
        if all(map(_numpy_number, dtypes)) and (fit or all(c is None for c in fitted_categories)):
            # every column a NumPy number and none label-coded: the whole frame in one conversion (a
            # column at a time is a pandas indexing call each, ~0.25 ms: most of a 1,000-row tree's fit)
            is_cat[sorted(declared)] = True
            values = np.ascontiguousarray(X.to_numpy(dtype=np.float64, copy=True))
            return _backend.from_numpy(xp, values), is_cat, categories
        values = np.empty(X.shape, dtype=np.float64)
        # (items(): a Series a column without iloc's indexing machinery, ~0.5 ms a column)
        for j, (_, col) in enumerate(X.items()):
            if _numpy_number(dtypes[j]) and (fit or fitted_categories[j] is None):
                # a NumPy number column, not label-coded: its values as they are (NaN stays NaN; pandas'
                # na_value= would scan the column for missing values first)
                is_cat[j] = j in declared
                values[:, j] = col.to_numpy()
                continue
            kind = str(dtypes[j])
            stringy = kind == "category" or kind == "object" or kind in ("string", "str")
            if fit:
                if kind == "category":
                    # the fit's labels are the column's categories: its own codes, no lookup
                    categorical = col.array
                    categories[j] = np.asarray(categorical.categories, dtype=object)
                    is_cat[j] = True
                    values[:, j] = _category_codes(categorical)
                    continue
                if stringy:
                    if j not in declared:
                        raise ValueError(
                            f"column {names[j]!r} holds strings/objects (dtype {col.dtype}); "
                            "declare it in categorical_features or give it the pandas "
                            "'category' dtype"
                        )
                    labels = _string_categories(col.tolist())
                    is_cat[j] = True
                else:
                    labels = None
                    is_cat[j] = j in declared
                categories[j] = labels
            else:
                labels = fitted_categories[j]
            if labels is not None:
                values[:, j] = _encode_pandas(col, labels)
            else:
                if stringy:
                    raise ValueError(
                        f"column {names[j]!r} holds strings/categories but was numerical at fit"
                    )
                try:
                    values[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
                except (TypeError, ValueError) as exc:
                    raise ValueError(
                        f"column {names[j]!r} (dtype {col.dtype}) cannot be converted to numbers"
                    ) from exc
        return _backend.from_numpy(xp, values), is_cat, categories

    if _backend.is_foreign_gpu_array(X) and _backend.is_cupy_namespace(xp):
        X = _backend.as_cupy(X)  # a view of the GPU memory (PyTorch CUDA tensors, ...)
    if _backend.is_array_api_array(X):
        if X.ndim != 2:
            raise ValueError(_ndim_message(X.ndim))
        xin = _backend.namespace_of(X)
        if xin.isdtype(X.dtype, "complex floating"):
            raise ValueError("Complex data not supported")
        Xd = _backend.convert_to_namespace(xp, X)
        # float64 input in the fit's namespace (CuPy on the GPU) is used as it is, not copied
        if not (keep_float32 and Xd.dtype == xp.float32):
            Xd = xp.astype(Xd, xp.float64, copy=False)
        n_features = X.shape[1]
        is_cat = np.zeros(n_features, dtype=bool)
        if fit:
            for j in resolve_categorical(categorical_features, n_features, None):
                is_cat[j] = True
        return Xd, is_cat, [None] * n_features

    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(_ndim_message(arr.ndim))
    n_features = arr.shape[1]
    is_cat = np.zeros(n_features, dtype=bool)
    categories = [None] * n_features
    if fit:
        for j in resolve_categorical(categorical_features, n_features, None):
            is_cat[j] = True
    if arr.dtype.kind in "OSU":
        values = np.empty(arr.shape, dtype=np.float64)
        for j in range(n_features):
            col = arr[:, j].tolist()
            labels = None
            if fit:
                if any(isinstance(v, (str, bytes)) for v in col):
                    if not is_cat[j]:
                        raise ValueError(
                            f"feature {j} holds strings; declare it in categorical_features "
                            "to split on it as a categorical feature"
                        )
                    labels = _string_categories(col)
                    categories[j] = labels
            else:
                labels = fitted_categories[j]
            if labels is not None:
                values[:, j] = _encode_labels(col, labels)
            else:
                # a TypeError (e.g. a dict in X) propagates as it is
                values[:, j] = np.asarray([np.nan if v is None else v for v in col], dtype=np.float64)
        return _backend.from_numpy(xp, values), is_cat, categories
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"X has an unsupported dtype {arr.dtype}")
    # float64 rows are used as they are (never written to), float32 ones too when asked
    keep = arr.dtype == np.float64 or (keep_float32 and arr.dtype == np.float32)
    return _backend.from_numpy(xp, arr if keep else arr.astype(np.float64)), is_cat, categories


def _check_fit_memory(X, xp) -> None:
    """Refuse, before anything is allocated on the GPU, a fit whose predicted peak exceeds the free memory.

    The prediction is :func:`gputrees._memory.fit_peak_bytes` for one tree,
    3 channels, uint8 codes and the default ``memory_limit``: the least a fit
    of ``X`` needs (forests and many classes need more).
    """
    if not _backend.is_cupy_namespace(xp):
        return
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return
    from ._memory import fit_peak_bytes

    float64_on_device = _backend.is_array_api_array(X) and str(getattr(X, "dtype", "")) == "float64"
    n, f = int(shape[0]), int(shape[1])
    if n < 1 or f < 1:
        return  # refused later with the usual message
    needed = fit_peak_bytes(n, f, float64_copy=not float64_on_device)
    _backend.check_device_memory(xp, needed, f"fitting X of shape ({n}, {f})")


def _ndim_message(ndim: int) -> str:
    return (
        f"Expected a 2D array for X, got a {ndim}D array instead. Reshape your data "
        "either using array.reshape(-1, 1) if your data has a single feature or "
        "array.reshape(1, -1) if it contains a single sample."
    )


def check_finite_x(xp, Xd) -> None:
    """Reject inf (NaN is a missing value and is allowed)."""
    if Xd.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={tuple(Xd.shape)}) while a minimum of 1 is required.")
    if Xd.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={tuple(Xd.shape)}) while a minimum of 1 is required.")
    if _sparse.is_sparse(Xd):
        _sparse.check_finite_sparse(Xd)
    elif bool(xp.any(xp.isinf(Xd))):
        raise ValueError("Input X contains infinity; only NaN (missing) is allowed among non-finite values")


def encode_classes(y):
    """The sorted distinct labels of ``y`` and each label's index among them: ``np.unique(y, return_inverse=True)``.

    Without its argsort of every label: the distinct labels found first
    (NumPy hashes integers), then each label's index by a binary search
    among them.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)

    Returns
    -------
    classes : ndarray of shape (n_classes,), the dtype of ``y``
    codes : ndarray of shape (n_samples,), int64
    """
    classes = np.unique(y)
    return classes, np.searchsorted(classes, y).astype(np.int64, copy=False)


def y_to_host(y, n_samples: int, multi_output: bool):
    """y as a NumPy array of shape (n,) or (n, k), with length and NaN checks."""
    if y is None:
        raise ValueError("requires y to be passed, but the target y is None")
    if _backend.is_dataframe(y) or _backend.is_series(y):
        y = y.to_numpy()
    elif _backend.is_array_api_array(y):
        y = _backend.to_numpy(y)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1 and not multi_output:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change "
            "the shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        y = y[:, 0]
    if y.ndim == 0 or y.ndim > 2 or (y.ndim == 2 and not multi_output):
        raise ValueError(f"y must be 1-D{' or 2-D' if multi_output else ''}, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have inconsistent numbers of samples: X has {n_samples}, y has {y.shape[0]}"
        )
    if y.dtype.kind in "fc" and np.isnan(y).any():
        raise ValueError("Input y contains NaN")
    if y.dtype.kind in "fc" and np.isinf(y).any():
        raise ValueError("Input y contains infinity")
    if y.dtype.kind == "O":
        if any(_backend._is_missing(v) for v in y.ravel().tolist()):
            raise ValueError("Input y contains NaN or None")
    return y


def sample_weight_to_host(sample_weight, n_samples: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, numbers.Number):
        sw = np.full(n_samples, float(sample_weight))
    else:
        if _backend.is_array_api_array(sample_weight):
            sample_weight = _backend.to_numpy(sample_weight)
        sw = np.asarray(sample_weight)
        if sw.dtype.kind not in "biuf":
            raise ValueError(f"sample_weight must be numeric, got dtype {sw.dtype}")
        sw = sw.astype(np.float64)
    if sw.ndim != 1:
        raise ValueError(f"sample_weight must be 1-D, got shape {sw.shape}")
    if sw.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight.shape == ({sw.shape[0]},), expected ({n_samples},): sample_weight "
            "and X have different lengths"
        )
    if not np.all(np.isfinite(sw)):
        raise ValueError("sample_weight contains NaN or infinity")
    if np.any(sw < 0):
        raise ValueError("sample_weight contains negative values")
    if not np.any(sw > 0):
        raise ValueError("sample_weight is zero for every sample: nothing to fit")
    with np.errstate(over="ignore"):  # a sum past float64's range is inf, refused below
        total = float(np.sum(sw))
    smallest = float(np.min(sw[sw > 0]))
    if total > MAX_TOTAL_WEIGHT:
        raise ValueError(
            f"sample_weight sums to {total:.3g}, more than 2**200 (~1.6e60): the criteria square "
            "weighted sums, which would overflow float64; rescale sample_weight"
        )
    if smallest < MIN_POSITIVE_WEIGHT:
        raise ValueError(
            f"sample_weight has a positive value {smallest:.3g} below 2**-200 (~6.2e-61): its square "
            "would underflow float64; rescale sample_weight (or set such rows to 0 to drop them)"
        )
    return sw


def check_target_scale(y: np.ndarray, sw: np.ndarray) -> None:
    """Refuse regression targets whose weighted squared sums overflow float64.

    Parameters
    ----------
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs), float64, finite
    sw : ndarray of shape (n_samples,), float64, the sample weights
    """
    big = float(np.max(np.abs(y))) if y.size else 0.0
    with np.errstate(over="ignore"):
        total = max(1.0, float(np.sum(sw)))
    if big * total * total > MAX_TARGET_SCALE:
        raise ValueError(
            f"y has values up to {big:.3g} in magnitude: with total sample weight {total:.3g} the "
            "squared sums the criteria form would overflow float64 (need max|y| * "
            "max(1, sum(sample_weight))**2 <= 2**400, ~2.6e120); rescale y"
        )


def drop_zero_weight_rows(xp, Xd, y_enc, sw):
    """Remove rows of weight 0: a row of weight 0 is a row that is not there.

    It then neither counts in ``n_node_samples`` nor places bin edges or
    thresholds (scikit-learn's semantics). Returns ``(Xd, y_enc, sw)``.
    """
    if np.all(sw > 0):
        return Xd, y_enc, sw
    keep = np.flatnonzero(sw > 0)
    return take_rows(xp, Xd, keep), y_enc[keep], sw[keep]


def take_rows(xp, X, rows):
    """Rows ``rows`` (host int array) of ``X``: a device array of namespace ``xp``, or a CSR matrix."""
    if _sparse.is_sparse(X):
        return _sparse.take_rows(X, rows)
    return xp.take(X, _backend.from_numpy(xp, rows), axis=0)


def regression_target(y: np.ndarray) -> np.ndarray:
    """A regression target as finite float64 (any shape), or a ValueError naming the problem."""
    if y.dtype.kind not in "biuf":
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric for regression, got dtype {y.dtype}") from exc
    y = y.astype(np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError("Input y contains infinity or NaN")
    return y


def holdout_split(n: int, fraction: float, class_codes, seed: int):
    """Training and validation row indices (sorted int64, host) holding out ``fraction`` of ``n`` rows.

    ``class_codes`` (n,) integer-valued: stratify by class when every class has
    two rows and both parts can hold one row of each (classifiers); None:
    plain random split (regressors). ``seed`` drives scikit-learn's
    ``train_test_split``.
    """
    n_val = int(math.ceil(fraction * n))
    if n_val < 1 or n - n_val < 1:
        raise ValueError(f"validation_fraction={fraction} leaves no training or no validation rows out of {n}")
    stratify = None
    if class_codes is not None:
        counts = np.bincount(np.asarray(class_codes).astype(np.int64))
        counts = counts[counts > 0]
        if counts.min() >= 2 and n_val >= counts.shape[0] and n - n_val >= counts.shape[0]:
            stratify = class_codes
    train, held = train_test_split(np.arange(n, dtype=np.int64), test_size=n_val, random_state=seed, stratify=stratify)
    return np.sort(train), np.sort(held)


def resolve_max_features(max_features, n_features: int) -> int:
    """Number of features searched per split: None (all), "sqrt", "log2", an int, or a fraction."""
    mf = max_features
    if mf is None:
        return n_features
    if mf == "sqrt":
        return max(1, int(math.sqrt(n_features)))
    if mf == "log2":
        return max(1, int(math.log2(n_features)))
    if isinstance(mf, numbers.Integral):
        if mf > n_features:
            raise ValueError(f"max_features={mf} is larger than n_features={n_features}")
        return int(mf)
    return max(1, int(mf * n_features))
