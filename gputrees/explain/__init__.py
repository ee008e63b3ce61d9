"""Explanations of fitted models: exact SHAP values (path-dependent TreeSHAP).

Every estimator has ``shap_values(X, interactions=False)`` (see
:class:`ShapMixin`); :class:`TreeExplainer` wraps a model the way shap's
TreeExplainer does and returns a ``shap.Explanation`` where the shap package
is installed, so that shap's plots take gputrees' values as they are. The
algorithm is in :mod:`gputrees.kernels.treeshap` (reference) and the kernel
sets.
"""

from ._explainer import Explanation, TreeExplainer, numeric_data
from ._values import ShapMixin, ShapModel

__all__ = ["ShapMixin", "ShapModel", "TreeExplainer", "Explanation", "numeric_data"]
