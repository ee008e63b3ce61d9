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
from ._model_io import ModelFormatError, load_model
from ._weight_boosting import AdaBoostClassifier, AdaBoostRegressor

__version__ = "0.1.0"

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
