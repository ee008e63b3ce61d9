"""Batched prediction over padded trees: rows x trees in parallel, a loop over depth only."""

from __future__ import annotations


def apply_trees(xp, batch, X, missing_bin: int, n_jobs: int | None = None):
    """Leaf reached by every row in every tree, with the fit's kernel set.

    Same contract as :func:`apply_trees_reference`; the Numba kernel set walks
    the trees in compiled code over ``n_jobs`` threads.
    """
    from .kernels import get_kernels

    return get_kernels(xp, n_jobs=n_jobs).apply_trees(xp, batch, X, missing_bin)


def apply_trees_reference(xp, batch, X, missing_bin: int):
    """Leaf reached by every row in every tree (array API standard only).

    Parameters
    ----------
    batch : TreeBatch
        Padded trees, arrays of shape (n_trees, n_nodes).
    X : array of shape (n_samples, n_features), float64
        Raw numerical columns (NaN = missing) and, for categorical features,
        the category codes of :meth:`BinMapper.encode_for_predict` (the missing
        bin for NaN and unseen categories).
    missing_bin : int

    Returns
    -------
    leaves : array of shape (n_samples, n_trees), int64
        Node index inside each tree.
    """
    n, n_features = X.shape
    n_trees, width = batch.left.shape
    x_flat = xp.reshape(X, (-1,))
    left = xp.reshape(batch.left, (-1,))
    right = xp.reshape(batch.right, (-1,))
    feature = xp.reshape(batch.feature, (-1,))
    threshold = xp.reshape(batch.threshold, (-1,))
    miss_left = xp.reshape(batch.missing_left, (-1,))
    any_cat = batch.cat_left.shape[-1] > 0
    if any_cat:
        n_bins = batch.cat_left.shape[-1]
        is_cat = xp.reshape(batch.is_categorical, (-1,))
        cat_left = xp.reshape(batch.cat_left, (-1,))
    offset = (xp.arange(n_trees, dtype=xp.int64) * width)[None, :]
    row_base = (xp.arange(n, dtype=xp.int64) * n_features)[:, None]
    node = xp.zeros((n, n_trees), dtype=xp.int64)
    shape = (n, n_trees)
    for _ in range(batch.max_depth):
        flat = xp.reshape(node + offset, (-1,))
        f = xp.reshape(xp.take(feature, flat), shape)
        is_leaf = f < 0
        x = xp.reshape(xp.take(x_flat, xp.reshape(row_base + xp.clip(f, 0, None), (-1,))), shape)
        missing = xp.isnan(x)
        go_left = x <= xp.reshape(xp.take(threshold, flat), shape)
        if any_cat:
            node_cat = xp.reshape(xp.take(is_cat, flat), shape)
            # only categorical nodes read a code; other nodes index code 0
            code = xp.where(
                missing | ~node_cat, xp.asarray(float(missing_bin), dtype=x.dtype), x
            )
            code = xp.where(node_cat, xp.astype(code, xp.int64), xp.zeros_like(node))
            cat = xp.reshape(xp.take(cat_left, flat * n_bins + xp.reshape(code, (-1,))), shape)
            go_left = xp.where(node_cat, cat, go_left)
            missing = missing | (node_cat & (code == missing_bin))
        go_left = xp.where(missing, xp.reshape(xp.take(miss_left, flat), shape), go_left)
        nxt = xp.where(
            go_left, xp.reshape(xp.take(left, flat), shape), xp.reshape(xp.take(right, flat), shape)
        )
        node = xp.where(is_leaf, node, nxt)
    return node


def gather_node_values(xp, values, leaves):
    """``values[t, leaves[i, t]]`` for every row ``i`` and tree ``t``.

    Parameters
    ----------
    values : array of shape (n_trees, n_nodes, ...)
    leaves : array of shape (n_samples, n_trees), int64

    Returns
    -------
    array of shape (n_samples, n_trees, ...)
    """
    n_trees, width = values.shape[:2]
    rest = tuple(values.shape[2:])
    flat = xp.reshape(values, (n_trees * width,) + rest)
    idx = xp.reshape(leaves + (xp.arange(n_trees, dtype=xp.int64) * width)[None, :], (-1,))
    out = xp.take(flat, idx, axis=0)
    return xp.reshape(out, tuple(leaves.shape) + rest)
