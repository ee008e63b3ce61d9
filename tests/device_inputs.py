"""A boosting round's inputs for the GPU's device level step (gputrees.kernels.gpu.tree), shared by its
simulator tests (tests/cuda_sim/test_device_tree.py) and its compilation test (tests/test_cuda_compiles.py)."""

from __future__ import annotations

import numpy as np

from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import Newton
from gputrees._records import GrowerInputs, GrowerParams
from gputrees.kernels import get_kernels, quantisation_scale, quantise

NP = namespace_of(np.empty(0))


def boosting_round(seed, n=120, n_features=3, k=1, missing=0.1, max_bins=12, subsample=None, kernels="cuda"):
    """(inputs, scale): binned rows, quantised [count, G, H] channels of K trees, the ``kernels`` set
    (the cuda set needs the simulator on NumPy arrays)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 0] = np.round(X[:, 0] * 2)  # few distinct values: exact bins
    X[rng.random(X.shape) < missing] = np.nan
    mapper = fit_bin_mapper(NP, X, np.zeros(n_features, dtype=bool), max_bins)
    codes = mapper.transform(NP, X)
    g = rng.normal(size=(k, n))
    h = rng.uniform(0.1, 1.0, size=(k, n))
    count = np.ones((k, n)) if subsample is None else (rng.random((k, n)) < subsample).astype(float)
    chan = np.stack([count, g * count, h * count], axis=2)
    scale = quantisation_scale(NP, chan, n)
    chan = quantise(NP, chan, scale)
    kernel_set = get_kernels(NP, kernels).quantised(scale)
    return GrowerInputs(codes=codes, channels=chan if k > 1 else chan[0], multiplicity=None, bin_mapper=mapper,
                        criterion=Newton(1.0), kernels=kernel_set, rng=np.random.default_rng(seed),
                        record_leaves=True, count_free_histograms=False), scale


def device_params(**kw):
    """Grower parameters the device step covers (depth 3 unless given)."""
    base = dict(max_depth=3, min_samples_split=2, min_samples_leaf=1, min_weight_leaf=0.5,
                sorted_small_nodes=False, local_thresholds=False)
    base.update(kw)
    return GrowerParams(**base)
