"""Batched prediction over padded trees: rows x trees in parallel, a loop over depth only."""

from __future__ import annotations


def apply_codes(xp, batch, codes, missing_bin: int):
    """Leaf reached by every row in every tree.

    Parameters
    ----------
    batch : TreeBatch
        Padded trees, arrays of shape (n_trees, n_nodes).
    codes : array of shape (n_samples, n_features), uint8/uint16
        Rows binned with the fit's bin mapper (unseen categories and NaN in
        the missing bin).
    missing_bin : int

    Returns
    -------
    leaves : array of shape (n_samples, n_trees), int64
        Node index inside each tree.
    """
    n, n_features = codes.shape
    n_trees, width = batch.left.shape
    codes_flat = xp.reshape(codes, (-1,))
    left = xp.reshape(batch.left, (-1,))
    right = xp.reshape(batch.right, (-1,))
    feature = xp.reshape(batch.feature, (-1,))
    bin_ = xp.reshape(batch.bin, (-1,))
    miss_left = xp.reshape(batch.missing_left, (-1,))
    any_cat = batch.cat_left.shape[-1] > 0
    if any_cat:
        n_bins = batch.cat_left.shape[-1]
        is_cat = xp.reshape(batch.is_categorical, (-1,))
        cat_left = xp.reshape(batch.cat_left, (-1,))
    offset = (xp.arange(n_trees, dtype=xp.int64) * width)[None, :]
    row_base = (xp.arange(n, dtype=xp.int64) * n_features)[:, None]
    node = xp.zeros((n, n_trees), dtype=xp.int64)
    for _ in range(batch.max_depth):
        flat = node + offset
        f = xp.take(feature, xp.reshape(flat, (-1,)))
        f = xp.reshape(f, (n, n_trees))
        is_leaf = f < 0
        code = xp.astype(
            xp.take(codes_flat, xp.reshape(row_base + xp.clip(f, 0, None), (-1,))), xp.int64
        )
        code = xp.reshape(code, (n, n_trees))
        flat1 = xp.reshape(flat, (-1,))
        go_left = code <= xp.reshape(xp.take(bin_, flat1), (n, n_trees))
        if any_cat:
            cat = xp.reshape(xp.take(cat_left, flat1 * n_bins + xp.reshape(code, (-1,))), (n, n_trees))
            go_left = xp.where(xp.reshape(xp.take(is_cat, flat1), (n, n_trees)), cat, go_left)
        go_left = xp.where(
            code == missing_bin, xp.reshape(xp.take(miss_left, flat1), (n, n_trees)), go_left
        )
        nxt = xp.where(
            go_left,
            xp.reshape(xp.take(left, flat1), (n, n_trees)),
            xp.reshape(xp.take(right, flat1), (n, n_trees)),
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
