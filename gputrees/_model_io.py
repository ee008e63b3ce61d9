"""Model files: ``est.save_model(path)`` and :func:`load_model`.

The format (version 1) is documented in ``docs/model_format.md``. In short,
a model file is a ZIP archive with

* ``model.json``: UTF-8 JSON, ``{"format": "gputrees-model",
  "format_version": 1, "gputrees_version": ..., "estimator": NODE,
  "arrays": {NAME: {"dtype": DTYPE, "shape": [...]}}}``, where NODE is a
  typed tree of the estimator's parameters and fitted attributes;
* one ``NAME.npy`` member (NumPy's ``.npy`` format, never pickled objects)
  per array of the ``arrays`` table.

Loading never executes code from the file: JSON is parsed into plain values,
arrays are read with ``allow_pickle=False``, and objects are rebuilt only
from a fixed list of gputrees classes (estimators, ``BinMapper``,
``TreeBatch``, ``Tree``, the split criteria). Everything that does not
match the documented layout raises :class:`ModelFormatError`. Arrays are
saved as host (NumPy) copies, so a model fitted with CuPy loads, as a NumPy
model, on a machine without a GPU.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import tempfile
import warnings
import zipfile

import numpy as np
from sklearn.base import BaseEstimator

from . import _backend
from ._records import category_width, mapper_category_positions
from ._version import __version__

__all__ = ["ModelFormatError", "ModelFileMixin", "load_model", "save_model", "FORMAT_VERSION"]

FORMAT_NAME = "gputrees-model"
#: Version of the layout written by :func:`save_model`; :func:`load_model`
#: reads exactly this version (bumped on any incompatible change).
FORMAT_VERSION = 1
JSON_MEMBER = "model.json"
#: Largest ``model.json`` accepted. The JSON holds parameters and small
#: fitted values only (tree arrays live in ``.npy`` members): a few kB per
#: estimator, so 64 MiB leaves room for AdaBoost ensembles of thousands of
#: trees while refusing a "zip bomb" before it is decompressed.
MAX_JSON_BYTES = 64 << 20
#: Largest ``.npy`` header: format 1.0 stores its length in 2 bytes, 2.0 in
#: 4; gputrees writes small headers (dtype, shape), so 64 KiB is generous.
MAX_NPY_HEADER_BYTES = 1 << 16
#: Deepest nesting of JSON nodes accepted (a real model nests about 6 deep:
#: AdaBoost > list > tree > TreeBatch > array); refuses recursion bombs.
MAX_NESTING = 32
#: dtype kinds an array member may have: bool, signed / unsigned integers,
#: floats, fixed-width unicode. Never object (pickled) or structured dtypes.
ALLOWED_DTYPE_KINDS = "biufU"

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ARRAY_NAME_RE = re.compile(r"^a[0-9]{1,9}$")


class ModelFormatError(ValueError):
    """A model file that is damaged, of another format version, or not a gputrees model.

    Raised by :func:`gputrees.load_model` for every problem with the file's
    contents; the message names the problem. (A path that cannot be opened
    raises the usual ``OSError``.)

    Parameters
    ----------
    message : str
        What is wrong with the file, and where.
    """

    def __init__(self, message: str):
        super().__init__(message)


class ModelFileMixin:
    """Adds :meth:`save_model` to a gputrees estimator."""

    def save_model(self, path):
        """Save the fitted estimator to a model file (see ``docs/model_format.md``).

        The file holds the parameters and everything :meth:`predict` needs
        (classes, feature names, categories, bin edges, tree arrays, ...), as
        JSON plus ``.npy`` arrays in one ZIP archive; device (CuPy) arrays are
        saved as host copies. The write is atomic: a temporary file in the
        same directory, renamed over ``path`` when complete.

        Parameters
        ----------
        path : str or os.PathLike
            Destination (conventionally ending in ``.gpt``).

        Returns
        -------
        self
        """
        save_model(self, path)
        return self


# -- the classes a file may name ------------------------------------------------
#: The public estimator classes, by name (:func:`register_estimators`).
_ESTIMATORS: dict[str, type] = {}


def register_estimators(*classes):
    """Let model files name these estimator classes (the package registers its public ones on import)."""
    for cls in classes:
        if not issubclass(cls, BaseEstimator):
            raise TypeError(f"{cls.__name__} is not an estimator")
        _ESTIMATORS[cls.__name__] = cls


def _registry():
    """Name -> (kind, class) of every class a model file may instantiate."""
    from ._binning import BinMapper
    from ._criteria import Criterion
    from ._records import Round, TreeBatch
    from ._tree import Tree

    reg = {name: ("estimator", cls) for name, cls in _ESTIMATORS.items()}
    reg["BinMapper"] = ("dataclass", BinMapper)
    reg["TreeBatch"] = ("dataclass", TreeBatch)
    reg["BoostingRound"] = ("dataclass", Round)
    reg["Tree"] = ("object", Tree)
    stack = [Criterion]
    while stack:
        c = stack.pop()
        reg["criteria." + c.__name__] = ("object", c)
        stack.extend(c.__subclasses__())
    return reg


def _name_of(reg, cls):
    for name, (_, c) in reg.items():
        if c is cls:
            return name
    return None


# -- saving ---------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.reg = _registry()
        self.arrays = {}

    def array(self, a: np.ndarray, where: str):
        if a.dtype.kind == "O":
            items = a.reshape(-1).tolist()
            for v in items:
                if not (v is None or isinstance(v, (bool, int, float, str))):
                    raise ValueError(
                        f"cannot save {where}: object array holding {type(v).__name__} "
                        "(only str, int, float, bool and None)"
                    )
            return {"type": "object_array", "shape": list(a.shape), "items": [self.encode(v, where) for v in items]}
        if a.dtype.kind not in ALLOWED_DTYPE_KINDS:
            raise ValueError(f"cannot save {where}: arrays of dtype {a.dtype} are not supported")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype)
        return {"type": "array", "name": name}

    def encode(self, v, where: str):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            return {"type": "float", "value": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
        if isinstance(v, np.generic):
            if v.dtype.kind not in "biuf":
                raise ValueError(f"cannot save {where}: NumPy scalar of dtype {v.dtype}")
            return {"type": "scalar", "dtype": v.dtype.str, "value": self.encode(v.item(), where)}
        if isinstance(v, np.ndarray):
            return self.array(v, where)
        if _backend.is_array_api_array(v):
            return self.array(_backend.to_numpy(v), where)
        if isinstance(v, (list, tuple)):
            items = [self.encode(x, f"{where}[{i}]") for i, x in enumerate(v)]
            return {"type": "list" if isinstance(v, list) else "tuple", "items": items}
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise ValueError(f"cannot save {where}: dict key {k!r} is not a str or int")
                items.append([k, self.encode(x, f"{where}[{k!r}]")])
            return {"type": "dict", "items": items}
        name = _name_of(self.reg, type(v))
        if name is None:
            raise ValueError(
                f"cannot save {where}: {type(v).__module__}.{type(v).__qualname__} is not a gputrees "
                "class the model format knows (use pickle or joblib for such models)"
            )
        kind = self.reg[name][0]
        if kind == "estimator":
            params = v.get_params(deep=False)
            state = {k: x for k, x in vars(v).items() if k not in params}
            if "callbacks" in params:
                # callbacks are code run during fit, not part of the model: a
                # file stores None (documented in docs/model_format.md)
                params["callbacks"] = None
            return {
                "type": "estimator",
                "class": name,
                "params": {k: self.encode(x, f"{where}.{k}") for k, x in params.items()},
                "state": {k: self.encode(x, f"{where}.{k}") for k, x in state.items()},
            }
        if kind == "dataclass":
            fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
            return {
                "type": "dataclass",
                "class": name,
                "fields": {k: self.encode(x, f"{where}.{k}") for k, x in fields.items()},
            }
        return {
            "type": "object",
            "class": name,
            "attributes": {k: self.encode(x, f"{where}.{k}") for k, x in vars(v).items()},
        }


def _check_saveable(est):
    if not isinstance(est, BaseEstimator) or _name_of(_registry(), type(est)) is None:
        raise TypeError(f"save_model saves gputrees estimators, got {type(est).__name__}")
    if not any(k.endswith("_") and not k.startswith("__") for k in vars(est)):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"this {type(est).__name__} is not fitted yet; call fit before save_model")


def save_model(est, path):
    """Save a fitted gputrees estimator to ``path`` (atomic write). See :meth:`ModelFileMixin.save_model`."""
    _check_saveable(est)
    enc = _Encoder()
    node = enc.encode(est, type(est).__name__)
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "gputrees_version": __version__,
        "estimator": node,
        "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape)} for k, a in enc.arrays.items()},
    }
    text = json.dumps(meta, allow_nan=False, indent=1)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(JSON_MEMBER, text)
        for name, a in enc.arrays.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, a, allow_pickle=False)
            zf.writestr(name + ".npy", npy.getvalue())
    write_atomic(path, buf.getvalue())


def write_atomic(path, data: bytes):
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``.

    A crash or an error never leaves a half-written file at ``path``.
    """
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".gputrees-", suffix=".tmp", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- loading --------------------------------------------------------------------
def _fail(msg):
    raise ModelFormatError(msg)


def _expect(cond, msg):
    if not cond:
        _fail(msg)


def _read_array(zf, name, spec):
    """Read member ``name.npy`` after checking its header against ``spec`` and its size."""
    _expect(isinstance(spec, dict) and set(spec) == {"dtype", "shape"}, f"array {name}: entry must have dtype and shape")
    dtype_str, shape = spec["dtype"], spec["shape"]
    _expect(isinstance(dtype_str, str), f"array {name}: dtype must be a string")
    try:
        dtype = np.dtype(dtype_str)
    except TypeError:
        _fail(f"array {name}: unknown dtype {dtype_str!r}")
    _expect(
        dtype.kind in ALLOWED_DTYPE_KINDS and dtype.fields is None and dtype.str == dtype_str,
        f"array {name}: dtype {dtype_str!r} is not allowed (bool, integers, floats or unicode)",
    )
    _expect(
        isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape),
        f"array {name}: shape must be a list of non-negative ints",
    )
    member = name + ".npy"
    try:
        info = zf.getinfo(member)
    except KeyError:
        _fail(f"array {name}: member {member} is missing")
    nbytes = math.prod(shape) * dtype.itemsize
    _expect(
        nbytes <= info.file_size <= nbytes + MAX_NPY_HEADER_BYTES,
        f"array {name}: member size {info.file_size} does not match shape {shape} and dtype {dtype_str}",
    )
    with zf.open(member) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(fh)
        else:
            _fail(f"array {name}: .npy version {version} is not supported")
        _expect(
            list(hshape) == shape and hdtype.str == dtype_str,
            f"array {name}: stored as {hdtype.str} {list(hshape)}, the metadata says {dtype_str} {shape}",
        )
    with zf.open(member) as fh:
        a = np.lib.format.read_array(fh, allow_pickle=False)
    return a


class _Decoder:
    def __init__(self, arrays):
        self.reg = _registry()
        self.arrays = arrays
        self.used = set()
        self.estimators = []

    def decode(self, node, where: str, depth: int = 0):
        _expect(depth <= MAX_NESTING, f"{where}: nested deeper than {MAX_NESTING} levels")
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        _expect(isinstance(node, dict), f"{where}: expected a typed node (JSON object), got {type(node).__name__}")
        kind = node.get("type")
        handler = getattr(self, "_node_" + kind, None) if isinstance(kind, str) and _NAME_RE.match(kind) else None
        _expect(handler is not None, f"{where}: unknown node type {kind!r}")
        return handler(node, where, depth + 1)

    def _keys(self, node, keys, where):
        _expect(set(node) == set(keys), f"{where}: a {node['type']} node has keys {sorted(keys)}, got {sorted(node)}")

    def _node_float(self, node, where, depth):
        self._keys(node, ("type", "value"), where)
        values = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        _expect(node["value"] in values, f"{where}: float value must be nan, inf or -inf")
        return values[node["value"]]

    def _node_scalar(self, node, where, depth):
        self._keys(node, ("type", "dtype", "value"), where)
        try:
            dtype = np.dtype(node["dtype"])
        except TypeError:
            _fail(f"{where}: unknown scalar dtype {node['dtype']!r}")
        _expect(dtype.kind in "biuf", f"{where}: scalar dtype {dtype} is not allowed")
        value = self.decode(node["value"], where, depth)
        _expect(isinstance(value, (bool, int, float)), f"{where}: scalar value must be a number")
        return dtype.type(value)

    def _node_array(self, node, where, depth):
        self._keys(node, ("type", "name"), where)
        name = node["name"]
        _expect(name in self.arrays, f"{where}: array {name!r} is not in the arrays table")
        _expect(name not in self.used, f"{where}: array {name!r} is referenced twice")
        self.used.add(name)
        return self.arrays[name]

    def _node_object_array(self, node, where, depth):
        self._keys(node, ("type", "shape", "items"), where)
        shape, items = node["shape"], node["items"]
        _expect(
            isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape) and isinstance(items, list),
            f"{where}: object_array needs a shape (list of ints) and items (list)",
        )
        _expect(math.prod(shape) == len(items), f"{where}: object_array of shape {shape} has {len(items)} items")
        values = [self.decode(v, where, depth) for v in items]
        _expect(all(v is None or isinstance(v, (bool, int, float, str)) for v in values), f"{where}: object_array items must be plain values")
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(shape)

    def _node_list(self, node, where, depth):
        self._keys(node, ("type", "items"), where)
        _expect(isinstance(node["items"], list), f"{where}: items must be a list")
        return [self.decode(v, f"{where}[{i}]", depth) for i, v in enumerate(node["items"])]

    def _node_tuple(self, node, where, depth):
        return tuple(self._node_list(node, where, depth))

    def _node_dict(self, node, where, depth):
        self._keys(node, ("type", "items"), where)
        items = node["items"]
        _expect(isinstance(items, list) and all(isinstance(p, list) and len(p) == 2 for p in items), f"{where}: dict items must be [key, value] pairs")
        out = {}
        for k, v in items:
            _expect(isinstance(k, (str, int)) and not isinstance(k, bool), f"{where}: dict key {k!r} is not a str or int")
            out[k] = self.decode(v, f"{where}[{k!r}]", depth)
        return out

    def _class(self, node, kind, where):
        name = node.get("class")
        entry = self.reg.get(name) if isinstance(name, str) else None
        _expect(entry is not None and entry[0] == kind, f"{where}: {name!r} is not a known {kind} class")
        return entry[1]

    def _attributes(self, cls, mapping, where, depth):
        _expect(isinstance(mapping, dict), f"{where}: attributes must be a JSON object")
        out = {}
        for k, v in mapping.items():
            _expect(
                _NAME_RE.match(k) is not None and not k.startswith("__") and not hasattr(cls, k),
                f"{where}: {k!r} is not a valid attribute name for {cls.__name__}",
            )
            out[k] = self.decode(v, f"{where}.{k}", depth)
        return out

    def _exact(self, mapping, names, what, where, depth):
        """Decoded ``mapping`` (a JSON object), whose keys must be exactly ``names``."""
        _expect(isinstance(mapping, dict), f"{where}: {what} must be a JSON object")
        _expect(
            set(mapping) == names,
            f"{where}: {what} must be exactly {sorted(names)}; "
            f"missing {sorted(names - set(mapping))}, unknown {sorted(set(mapping) - names)}",
        )
        return {k: self.decode(v, f"{where}.{k}", depth) for k, v in mapping.items()}

    def _node_estimator(self, node, where, depth):
        self._keys(node, ("type", "class", "params", "state"), where)
        cls = self._class(node, "estimator", where)
        expected = set(cls().get_params(deep=False))
        est = cls(**self._exact(node["params"], expected, f"parameters of {cls.__name__}", where, depth))
        try:
            est._validate_params()
        except (ValueError, TypeError) as exc:
            _fail(f"{where}: invalid parameter: {exc}")
        for k, v in self._attributes(cls, node["state"], where, depth).items():
            _expect(k not in expected, f"{where}: state attribute {k!r} is a parameter")
            setattr(est, k, v)
        self.estimators.append((est, where))
        return est

    def _node_dataclass(self, node, where, depth):
        self._keys(node, ("type", "class", "fields"), where)
        cls = self._class(node, "dataclass", where)
        names = {f.name for f in dataclasses.fields(cls)}
        obj = cls(**self._exact(node["fields"], names, f"fields of {cls.__name__}", where, depth))
        _CHECKS.get(cls.__name__, lambda o, w: None)(obj, where)
        return obj

    def _node_object(self, node, where, depth):
        self._keys(node, ("type", "class", "attributes"), where)
        cls = self._class(node, "object", where)
        obj = object.__new__(cls)
        vars(obj).update(self._attributes(cls, node["attributes"], where, depth))
        return obj


# -- structural checks ----------------------------------------------------------
def _arr(obj, name, where, dtype, ndim):
    a = getattr(obj, name)
    _expect(
        isinstance(a, np.ndarray) and a.dtype == np.dtype(dtype) and a.ndim == ndim,
        f"{where}.{name}: expected a {ndim}-D {dtype} array",
    )
    return a


def _check_tree_batch(b, where):
    """Shapes, dtypes and node links of a TreeBatch: predictions stay in bounds and terminate."""
    count = _arr(b, "node_count", where, "int64", 1)
    left = _arr(b, "left", where, "int64", 2)
    n_trees, width = left.shape
    _expect(count.shape == (n_trees,), f"{where}.node_count: shape {count.shape}, expected ({n_trees},)")
    _expect(bool(np.all((count >= 1) & (count <= width))), f"{where}.node_count: values outside [1, {width}]")
    for name, dtype in (("right", "int64"), ("feature", "int64"), ("bin", "int64"), ("depth", "int64"),
                        ("missing_left", "bool"), ("is_categorical", "bool"), ("threshold", "float64")):
        a = _arr(b, name, where, dtype, 2)
        _expect(a.shape == left.shape, f"{where}.{name}: shape {a.shape}, expected {left.shape}")
    cat = _arr(b, "cat_left", where, "bool", 3)
    stats = _arr(b, "stats", where, "float64", 3)
    _expect(cat.shape[:2] == left.shape and stats.shape[:2] == left.shape, f"{where}: cat_left/stats shapes do not match left {left.shape}")
    internal = b.feature >= 0
    node = np.arange(width)[None, :]
    for name in ("left", "right"):
        child = getattr(b, name)
        _expect(
            bool(np.all(~internal | ((child > node) & (child < width)))),
            f"{where}.{name}: a split node's child is not a later node of its tree",
        )
    _expect(
        not bool(np.any(internal & b.is_categorical)) or cat.shape[2] > 0,
        f"{where}: categorical splits without cat_left",
    )
    _expect(
        isinstance(b.max_depth, int) and 0 <= b.max_depth <= width,
        f"{where}.max_depth: must be an int in [0, {width}]",
    )
    for name in ("row_leaf", "lower", "upper"):
        a = getattr(b, name)
        _expect(a is None or isinstance(a, np.ndarray), f"{where}.{name}: expected an array or null")


def _check_bin_mapper(m, where):
    thr = _arr(m, "thresholds", where, "float64", 2)
    n_features = thr.shape[0]
    for name, dtype in (("n_value_bins", "int64"), ("is_categorical", "bool")):
        a = _arr(m, name, where, dtype, 1)
        _expect(a.shape == (n_features,), f"{where}.{name}: shape {a.shape}, expected ({n_features},)")
    _expect(
        isinstance(m.n_bins, int) and m.n_bins == thr.shape[1] + 1 and bool(np.all((m.n_value_bins >= 0) & (m.n_value_bins < m.n_bins))),
        f"{where}: n_bins and n_value_bins do not match thresholds of shape {thr.shape}",
    )
    _expect(isinstance(m.category_values, list) and len(m.category_values) == n_features, f"{where}.category_values: expected a list of {n_features}")
    for j, cv in enumerate(m.category_values):
        _expect(
            (cv is None and not m.is_categorical[j]) or (isinstance(cv, np.ndarray) and cv.ndim == 1 and cv.dtype == np.float64),
            f"{where}.category_values[{j}]: expected a 1-D float64 array for a categorical feature, else null",
        )


_CHECKS = {"TreeBatch": _check_tree_batch, "BinMapper": _check_bin_mapper}


def _walk(value):
    """TreeBatches and BinMappers inside ``value`` (not inside nested estimators)."""
    from ._binning import BinMapper
    from ._records import TreeBatch

    if isinstance(value, (TreeBatch, BinMapper)):
        yield value
    if isinstance(value, BaseEstimator):
        return
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _walk(getattr(value, f.name))


def _check_estimator(est, where):
    """Feature indices and bin axes of the estimator's trees against its input width."""
    from ._binning import BinMapper

    n_features = getattr(est, "n_features_in_", None)
    _expect(isinstance(n_features, int) and n_features >= 1, f"{where}: n_features_in_ must be a positive int")
    for sub in getattr(est, "estimators_", None) or ():
        if isinstance(sub, BaseEstimator):
            _expect(getattr(sub, "n_features_in_", None) == n_features, f"{where}: an estimator of estimators_ has another n_features_in_")
    found = list(_walk(dict(vars(est))))
    # a batch's codes sent left: a column per category and the missing bin's (a column per bin before)
    widths = {w for m in found if isinstance(m, BinMapper)
              for w in (m.n_bins, category_width(mapper_category_positions(m)))}
    for m in found:
        if isinstance(m, BinMapper):
            _expect(m.thresholds.shape[0] == n_features, f"{where}: bin edges for {m.thresholds.shape[0]} features, n_features_in_ is {n_features}")
        else:
            _expect(bool(np.all(m.feature < n_features)), f"{where}: a split on a feature index >= n_features_in_ ({n_features})")
            width = m.cat_left.shape[2]
            _expect(width == 0 or width in widths, f"{where}: cat_left has {width} columns, the bin edges allow {sorted(widths)}")


def _probe(est):
    """Predict a few rows (zeros, NaN, extremes; first category labels): must give finite values of the right shape."""
    n = est.n_features_in_
    rows = [[0.0] * n, [math.nan] * n, [1.0] * n, [-1e300] * n, [1e300] * n]
    X = np.asarray(rows, dtype=object)
    cats = getattr(est, "_categories", None)
    if isinstance(cats, list) and len(cats) == n:
        for j, labels in enumerate(cats):
            if labels is not None and len(labels):
                X[0, j] = labels[0]
                X[2, j] = labels[-1]
    if not any(isinstance(v, str) for v in X.ravel()):
        X = X.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = est.predict_proba(X) if hasattr(est, "predict_proba") and hasattr(est, "classes_") else est.predict(X)
        out = np.asarray(_backend.to_numpy(out))
    _expect(out.shape[0] == len(rows), f"predict returned {out.shape[0]} rows for {len(rows)}")
    _expect(out.dtype.kind == "f" and bool(np.all(np.isfinite(out))), "the model predicts non-finite values")


def load_model(path):
    """Load an estimator saved with ``save_model``.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    estimator
        The fitted gputrees estimator, with NumPy arrays (a model saved from
        CuPy loads on the CPU; refit with ``device="cuda"`` or pass CuPy data to
        train on the GPU again).

    Raises
    ------
    ModelFormatError
        The file is not a gputrees model file, has another format version,
        is truncated or damaged, or its contents do not match the documented
        layout (names, shapes, dtypes, node links). Nothing in the file is
        executed.
    OSError
        The path cannot be opened.
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return _load_bytes(data)
    except ModelFormatError:
        raise
    except Exception as exc:  # zipfile, zlib, JSON and .npy parsers: any failure is a damaged file
        raise ModelFormatError(f"{path}: not a valid gputrees model file ({type(exc).__name__}: {exc})") from None


def _load_bytes(data: bytes):
    _expect(data[:4] == b"PK\x03\x04", "not a gputrees model file (not a ZIP archive)")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
        _expect(len(names) == len(set(names)), "duplicate members in the archive")
        _expect(JSON_MEMBER in names, f"no {JSON_MEMBER} in the archive")
        info = zf.getinfo(JSON_MEMBER)
        _expect(info.file_size <= MAX_JSON_BYTES, f"{JSON_MEMBER} declares {info.file_size} bytes (limit {MAX_JSON_BYTES})")
        meta = json.loads(zf.read(JSON_MEMBER).decode("utf-8"), parse_constant=_reject_constant)
        _expect(isinstance(meta, dict), f"{JSON_MEMBER} is not a JSON object")
        _expect(meta.get("format") == FORMAT_NAME, f"not a gputrees model file (format {meta.get('format')!r})")
        version = meta.get("format_version")
        _expect(
            version == FORMAT_VERSION and isinstance(version, int),
            f"model format version {version!r}; this gputrees reads version {FORMAT_VERSION}",
        )
        expected = {"format", "format_version", "gputrees_version", "estimator", "arrays"}
        _expect(set(meta) == expected, f"{JSON_MEMBER} must have exactly the keys {sorted(expected)}, got {sorted(meta)}")
        table = meta["arrays"]
        _expect(isinstance(table, dict), "arrays table must be a JSON object")
        _expect(all(isinstance(k, str) and _ARRAY_NAME_RE.match(k) for k in table), "array names must be a0, a1, ...")
        extra = set(names) - {JSON_MEMBER} - {k + ".npy" for k in table}
        _expect(not extra, f"unexpected members in the archive: {sorted(extra)[:5]}")
        arrays = {k: _read_array(zf, k, spec) for k, spec in table.items()}
    dec = _Decoder(arrays)
    est = dec.decode(meta["estimator"], "estimator")
    _expect(isinstance(est, BaseEstimator), "the top node is not an estimator")
    unused = set(arrays) - dec.used
    _expect(not unused, f"arrays never referenced: {sorted(unused)[:5]}")
    for e, where in dec.estimators:
        if any(k.endswith("_") for k in vars(e)):  # fitted (AdaBoost's ``estimator`` template is not)
            _check_estimator(e, where)
    try:
        _probe(est)
    except ModelFormatError:
        raise
    except Exception as exc:  # any failure to predict means the file is inconsistent
        _fail(f"the loaded model cannot predict ({type(exc).__name__}: {exc})")
    return est


def _reject_constant(name):
    _fail(f"{JSON_MEMBER}: {name} is not valid JSON (non-finite floats are typed nodes)")
