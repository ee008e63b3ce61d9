"""Batched prediction over padded trees: rows x trees in parallel, a loop over depth only."""

from __future__ import annotations

import dataclasses

from ._sparse import dense_blocks, is_sparse, tested_columns


def apply_trees(xp, batch, X, missing_bin: int, n_jobs: int | None = None):
    """Leaf reached by every row in every tree, with the fit's kernel set.

    Same contract as :func:`apply_trees_reference`; the Numba kernel set walks
    the trees in compiled code over ``n_jobs`` threads.
    """
    from .kernels import get_kernels

    apply = get_kernels(xp, n_jobs=n_jobs, prediction=True).apply_trees
    return _by_row_blocks(xp, batch, X, lambda trees, rows: apply(xp, trees, rows, missing_bin))


def tree_value_sums(xp, batch, values, X, missing_bin: int, n_jobs: int | None = None):
    """The sum over the trees of every row's leaf values, with the fit's kernel set.

    Same contract as :func:`gputrees.kernels.reference.tree_value_sums`; the
    Numba kernel set walks the trees and adds the values in one compiled pass.
    """
    from .kernels import get_kernels

    sums = get_kernels(xp, n_jobs=n_jobs, prediction=True).tree_value_sums
    return _by_row_blocks(xp, batch, X, lambda trees, rows: sums(xp, trees, values, rows, missing_bin))


def predict_raw(xp, batch, values, X, missing_bin: int, base, n_jobs: int | None = None):
    """``base`` (n, K) plus every row's leaf value in every tree, with the fit's kernel set.

    Same contract as :func:`gputrees.kernels.reference.predict_raw` (tree
    ``r * K + c`` adds to column ``c``, in tree order: the sums of a fit's
    rounds); a sparse ``X`` is walked in dense blocks (:func:`sparse_blocks`).
    """
    from .kernels import get_kernels

    predict = get_kernels(xp, n_jobs=n_jobs, prediction=True).predict_raw
    if is_sparse(X):
        trees, blocks = sparse_blocks(batch, X)
        return xp.concat([predict(xp, trees, values, block, missing_bin, base[s:e, :]) for s, e, block in blocks],
                         axis=0)
    return predict(xp, batch, values, X, missing_bin, base)


def sparse_blocks(batch, X):
    """``(batch, blocks)`` to walk a sparse ``X``: the batch with its features numbered in the columns its trees
    test, and ``(start, stop, dense block)`` of consecutive rows of those columns (gputrees._sparse)."""
    X_cut, feature = tested_columns(X, batch.feature)
    return dataclasses.replace(batch, feature=feature), dense_blocks(X_cut)


def _by_row_blocks(xp, batch, X, walk):
    """``walk(batch, X)``; a sparse ``X`` walked in dense blocks (:func:`sparse_blocks`), the results stacked."""
    if is_sparse(X):
        trees, blocks = sparse_blocks(batch, X)
        return xp.concat([walk(trees, block) for _, _, block in blocks], axis=0)
    return walk(batch, X)
