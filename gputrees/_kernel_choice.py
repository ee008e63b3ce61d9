"""An estimator's fit names its family and its size to the kernel choice (:mod:`gputrees.kernels.cold_start`)."""

from __future__ import annotations

import functools

import numpy as np

from .kernels import cold_start

__all__ = ["chooses_kernels"]


def chooses_kernels(fit):
    """Decorate an estimator's ``fit(self, X, ...)``: the whole fit takes one kernel set, chosen for its family
    (the class's name) and its work (rows x features x ``n_estimators``)."""

    @functools.wraps(fit)
    def fit_with_kernels(self, X, *args, **kwargs):
        with cold_start.fitting(type(self).__name__, _work(self, X)):
            return fit(self, X, *args, **kwargs)

    return fit_with_kernels


def _work(estimator, X) -> int:
    """Rows x features x trees of the fit, read without converting ``X`` (0 where it cannot say: small)."""
    shape = getattr(X, "shape", None)
    try:
        rows, features = (shape[0], shape[1]) if shape is not None and len(shape) == 2 else (len(X), len(X[0]))
    except (TypeError, IndexError, KeyError):  # not a table: the fit's validation says what is wrong
        return 0
    trees = getattr(estimator, "n_estimators", 1)
    trees = trees if isinstance(trees, (int, np.integer)) and trees > 0 else 1
    return int(rows) * int(features) * int(trees)
