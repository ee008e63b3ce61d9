"""Batched prediction over padded trees: rows x trees in parallel, a loop over depth only."""

from __future__ import annotations

from ._sparse import dense_blocks, is_sparse


def apply_trees(xp, batch, X, missing_bin: int, n_jobs: int | None = None):
    """Leaf reached by every row in every tree, with the fit's kernel set.

    Same contract as :func:`apply_trees_reference`; the Numba kernel set walks
    the trees in compiled code over ``n_jobs`` threads.
    """
    from .kernels import get_kernels

    apply = get_kernels(xp, n_jobs=n_jobs, prediction=True).apply_trees
    return _by_row_blocks(xp, X, lambda rows: apply(xp, batch, rows, missing_bin))


def tree_value_sums(xp, batch, values, X, missing_bin: int, n_jobs: int | None = None):
    """The sum over the trees of every row's leaf values, with the fit's kernel set.

    Same contract as :func:`gputrees.kernels.reference.tree_value_sums`; the
    Numba kernel set walks the trees and adds the values in one compiled pass.
    """
    from .kernels import get_kernels

    sums = get_kernels(xp, n_jobs=n_jobs, prediction=True).tree_value_sums
    return _by_row_blocks(xp, X, lambda rows: sums(xp, batch, values, rows, missing_bin))


def _by_row_blocks(xp, X, walk):
    """``walk(X)``; a sparse ``X`` walked in dense blocks of rows (gputrees._sparse), the results stacked."""
    if is_sparse(X):
        return xp.concat([walk(block) for _, _, block in dense_blocks(X)], axis=0)
    return walk(X)
