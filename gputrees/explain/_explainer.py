"""``TreeExplainer``: shap's explainer interface over a gputrees model's own ``shap_values``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _backend

__all__ = ["TreeExplainer", "Explanation", "numeric_data"]


@dataclass(frozen=True)
class Explanation:
    """What ``TreeExplainer(model)(X)`` gives where the shap package is not installed (``shap.Explanation``'s fields).

    Attributes
    ----------
    values : ndarray of shape (n_samples, n_features) or (n_samples, n_features, n_outputs)
        SHAP values, without the bias.
    base_values : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        The bias (expected value) of each row.
    data : ndarray of shape (n_samples, n_features), float64
        The rows, categories as their codes (:func:`numeric_data`).
    feature_names : list of str
    display_data : DataFrame or None
        The rows as given, where they were a DataFrame.
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: list
    display_data: object = None


def numeric_data(X) -> np.ndarray:
    """``X`` as float64 for plots' colours: pandas categories as their codes (NaN where missing).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        NumPy, pandas or any array-API array.

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
    """
    if hasattr(X, "columns"):
        cols = []
        for name in X.columns:
            col = X[name]
            if str(col.dtype) == "category":
                codes = col.cat.codes.to_numpy().astype(np.float64)
                cols.append(np.where(codes < 0, np.nan, codes))
            else:
                cols.append(np.asarray(col, dtype=np.float64))
        return np.stack(cols, axis=1) if cols else np.zeros((len(X), 0))
    return np.asarray(_backend.to_numpy(X) if _backend.is_array_api_array(X) else X, dtype=np.float64)


class TreeExplainer:
    """Exact SHAP values of a fitted gputrees model, with shap's ``TreeExplainer`` interface.

    ``explainer(X)`` returns a ``shap.Explanation`` where the shap package is
    installed (so that ``shap.plots.beeswarm``, ``waterfall`` and
    ``scatter`` take it as it is), else a :class:`Explanation` with the same
    fields. ``shap_values`` and ``shap_interaction_values`` return the values
    without the bias, as shap's do, and set ``expected_value``. The values are
    the model's own :meth:`~gputrees.explain.ShapMixin.shap_values` (see there
    for which output each estimator explains).

    Parameters
    ----------
    model : fitted gputrees estimator
    """

    def __init__(self, model):
        if not hasattr(model, "shap_values"):
            raise TypeError(f"{type(model).__name__} is not a gputrees estimator with shap_values")
        self.model = model
        self.expected_value = None

    def _split(self, full, interactions):
        """(values without the bias, the bias of the first row) from ``shap_values``' output (host)."""
        full = _backend.to_numpy(full)
        if interactions:
            self.expected_value = full[0, -1, -1, ...]
            return full[:, :-1, :-1, ...]
        self.expected_value = full[0, -1, ...]
        return full[:, :-1, ...]

    def shap_values(self, X):
        """SHAP values without the bias (set as ``expected_value``), as shap's ``TreeExplainer.shap_values``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features) or (n_samples, n_features, n_outputs), float64
        """
        return self._split(self.model.shap_values(X), False)

    def shap_interaction_values(self, X):
        """SHAP interaction values without the bias (set as ``expected_value``), as shap's.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features, n_features[, n_outputs]), float64
        """
        return self._split(self.model.shap_values(X, interactions=True), True)

    def __call__(self, X):
        """The explanation of the rows of ``X``: ``shap.Explanation`` with shap installed, else :class:`Explanation`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        shap.Explanation or Explanation
            ``values`` (n_samples, n_features[, n_outputs]), ``base_values``
            (n_samples[, n_outputs]), ``data`` the rows as float64 (categories
            as codes), ``display_data`` the DataFrame's values where ``X`` is one.
        """
        full = _backend.to_numpy(self.model.shap_values(X))
        values = full[:, :-1, ...]
        base = full[:, -1, ...]
        self.expected_value = base[0] if base.shape[0] else None
        names = getattr(self.model, "feature_names_in_", None)
        names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(values.shape[1])]
        data = numeric_data(X)
        display = X if hasattr(X, "columns") else None
        try:
            import shap
        except ImportError:
            return Explanation(values, base, data, names, display)
        return shap.Explanation(values, base_values=base, data=data, feature_names=names,
                                display_data=None if display is None else display.to_numpy())
