"""Every gputrees estimator, small enough for property-based and reliability tests.

``ESTIMATORS`` maps a short name to a factory ``make(random_state) -> estimator``;
``available_kernels()`` lists the kernel sets (``GPUTREES_KERNELS`` values)
that load on this machine, so tests parametrized over it pick up new ones.
"""

from __future__ import annotations

import numpy as np

import gputrees
from gputrees.kernels import KERNEL_NAMES, get_kernels

ESTIMATORS = {
    "tree_clf": lambda rs=0: gputrees.DecisionTreeClassifier(random_state=rs),
    "tree_reg": lambda rs=0: gputrees.DecisionTreeRegressor(random_state=rs),
    "extra_tree_clf": lambda rs=0: gputrees.ExtraTreesClassifier(n_estimators=1, bootstrap=False, random_state=rs),
    "extra_tree_reg": lambda rs=0: gputrees.ExtraTreesRegressor(n_estimators=1, bootstrap=False, random_state=rs),
    "forest_clf": lambda rs=0: gputrees.RandomForestClassifier(n_estimators=4, max_depth=6, random_state=rs),
    "forest_reg": lambda rs=0: gputrees.RandomForestRegressor(n_estimators=4, max_depth=6, random_state=rs),
    "extra_forest_clf": lambda rs=0: gputrees.ExtraTreesClassifier(n_estimators=4, max_depth=6, random_state=rs),
    "extra_forest_reg": lambda rs=0: gputrees.ExtraTreesRegressor(n_estimators=4, max_depth=6, random_state=rs),
    "adaboost_clf": lambda rs=0: gputrees.AdaBoostClassifier(n_estimators=4, random_state=rs),
    "adaboost_reg": lambda rs=0: gputrees.AdaBoostRegressor(n_estimators=4, random_state=rs),
    "gboost_clf": lambda rs=0: gputrees.GradientBoostingClassifier(n_estimators=4, max_depth=3, random_state=rs),
    "gboost_reg": lambda rs=0: gputrees.GradientBoostingRegressor(n_estimators=4, max_depth=3, random_state=rs),
}

CLASSIFIERS = [n for n in ESTIMATORS if n.endswith("_clf")]
REGRESSORS = [n for n in ESTIMATORS if n.endswith("_reg")]

# estimators with randomness in the trees themselves (not only in sampling)
RANDOMISED = [
    "extra_tree_clf", "extra_tree_reg", "forest_clf", "forest_reg", "extra_forest_clf", "extra_forest_reg", "adaboost_reg"
]


def available_kernels() -> list[str]:
    """Kernel set names (besides "auto") that load here, e.g. ["reference", "bincount"]."""
    names = []
    for name in KERNEL_NAMES:
        if name == "auto":
            continue
        try:
            get_kernels(np, name)
        except (ImportError, ValueError):  # an optional dependency (numba) missing
            continue
        names.append(name)
    return names


def fitted_arrays(est) -> dict:
    """Every array-valued or scalar fitted attribute of ``est``, recursively, as host NumPy.

    Keys are attribute paths (``"_batches[0].left"``); used to compare two fits
    bit for bit.
    """
    from dataclasses import fields, is_dataclass

    from gputrees import _backend

    out: dict = {}

    def walk(path, v, depth):
        if depth > 6:
            return
        if _backend.is_array_api_array(v) or isinstance(v, np.ndarray):
            out[path] = _backend.to_numpy(v)
        elif isinstance(v, (int, float, str, bool, np.generic)) or v is None:
            out[path] = v
        elif isinstance(v, (list, tuple)):
            for i, item in enumerate(v):
                walk(f"{path}[{i}]", item, depth + 1)
        elif isinstance(v, dict):
            for k, item in v.items():
                walk(f"{path}[{k!r}]", item, depth + 1)
        elif is_dataclass(v):
            for f in fields(v):
                walk(f"{path}.{f.name}", getattr(v, f.name), depth + 1)
        elif hasattr(v, "get_params") and hasattr(v, "__dict__"):  # a sub-estimator
            for k, item in vars(v).items():
                if k.endswith("_") or k.startswith("_"):
                    walk(f"{path}.{k}", item, depth + 1)
        elif hasattr(v, "__dict__") and type(v).__module__.startswith("gputrees"):
            for k, item in vars(v).items():
                walk(f"{path}.{k}", item, depth + 1)

    for k, v in vars(est).items():
        if k.endswith("_") or k.startswith("_"):
            walk(k, v, 0)
    return out


def assert_same_model(a, b):
    """Every fitted array of ``a`` and ``b`` equal: integers and booleans exactly, floats to 1e-10 relative
    (kernel sets that sum in the same order give equal models; a monitored loss may differ in its last bit)."""
    arrays_a, arrays_b = fitted_arrays(a), fitted_arrays(b)
    assert arrays_a.keys() == arrays_b.keys()
    assert sum(isinstance(x, np.ndarray) for x in arrays_a.values()) > 5
    for k, x in arrays_a.items():
        y = arrays_b[k]
        if not isinstance(x, np.ndarray):
            assert type(x) is type(y), k
            if isinstance(x, (float, np.floating)):
                np.testing.assert_allclose(x, y, rtol=1e-10, atol=0, equal_nan=True, err_msg=k)
            else:
                assert x == y, k
            continue
        assert x.shape == y.shape and x.dtype == y.dtype, k
        if x.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=0, equal_nan=True, err_msg=k)
        else:
            assert np.array_equal(x, y), k
