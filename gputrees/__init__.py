"""gputrees: decision trees and tree ensembles on GPUs (CuPy) and CPUs (NumPy).

One array-API code path grows trees level by level from binned histograms,
on whatever device the data lives on.
"""

from ._boosting import GradientBoostingClassifier, GradientBoostingRegressor
from ._classes import DecisionTreeClassifier, DecisionTreeRegressor
from ._export import export_graphviz, export_text
from ._forest import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from ._model_io import ModelFormatError, load_model, register_estimators
from ._weight_boosting import AdaBoostClassifier, AdaBoostRegressor

from ._version import __version__

__all__ = [
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "AdaBoostClassifier",
    "AdaBoostRegressor",
    "GradientBoostingClassifier",
    "GradientBoostingRegressor",
    "export_graphviz",
    "export_text",
    "load_model",
    "ModelFormatError",
    "__version__",
]

# the classes a model file may name
register_estimators(*(obj for obj in map(globals().get, __all__) if isinstance(obj, type) and hasattr(obj, "fit")))
