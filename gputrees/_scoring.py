"""``score`` computed on the host, for every estimator.

scikit-learn's ``ClassifierMixin.score`` and ``RegressorMixin.score`` pass ``y``
and ``predict(X)`` to :func:`~sklearn.metrics.accuracy_score` and
:func:`~sklearn.metrics.r2_score`, which call ``numpy.asarray`` on them unless
scikit-learn's array-API dispatch is on. CuPy refuses that implicit
device-to-host copy, so ``est.score(X_gpu, y_gpu)`` raised ``TypeError`` on a
GPU. These mixins copy ``y``, the predictions and ``sample_weight`` (vectors
of ``n_samples`` values) to NumPy explicitly first, and return what the
scikit-learn mixin returns for the same NumPy inputs, as a Python float.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin as _SkClassifierMixin
from sklearn.base import RegressorMixin as _SkRegressorMixin
from sklearn.metrics import accuracy_score, r2_score

from . import _backend


def to_host(a):
    """Array-API arrays (CuPy, PyTorch, array-api-strict) to NumPy; anything else unchanged."""
    return _backend.to_numpy(a) if _backend.is_array_api_array(a) else a


def _host_score(metric, estimator, X, y, sample_weight):
    y_pred = _backend.to_numpy(estimator.predict(X))
    sw = None if sample_weight is None else np.asarray(to_host(sample_weight))
    return float(metric(np.asarray(to_host(y)), y_pred, sample_weight=sw))


class ClassifierMixin(_SkClassifierMixin):
    """scikit-learn's ClassifierMixin whose ``score`` also takes GPU arrays."""

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of :meth:`predict` on (X, y), computed on the host.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        y : array-like of shape (n_samples,)
            True labels, in any of the namespaces above.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        return _host_score(accuracy_score, self, X, y, sample_weight)


class RegressorMixin(_SkRegressorMixin):
    """scikit-learn's RegressorMixin whose ``score`` also takes GPU arrays."""

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 of :meth:`predict` on (X, y), computed on the host.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            True targets, in any of the namespaces above.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        return _host_score(r2_score, self, X, y, sample_weight)
