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
    if is_sparse(X):  # walked in dense blocks of rows (gputrees._sparse)
        return xp.concat([apply(xp, batch, block, missing_bin) for _, _, block in dense_blocks(X)], axis=0)
    return apply(xp, batch, X, missing_bin)


