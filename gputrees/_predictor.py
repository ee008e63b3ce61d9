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

    kernels = get_kernels(xp, n_jobs=n_jobs, prediction=True)
    return _by_row_blocks(xp, batch, X, lambda trees, rows, _: kernels.apply_trees(xp, trees, rows, missing_bin),
                          kernels.csr_columns)


def tree_value_sums(xp, batch, values, X, missing_bin: int, n_jobs: int | None = None):
    """The sum over the trees of every row's leaf values, with the fit's kernel set.

    Same contract as :func:`gputrees.kernels.reference.tree_value_sums`; the
    Numba kernel set walks the trees and adds the values in one compiled pass.
    """
    from .kernels import get_kernels

    kernels = get_kernels(xp, n_jobs=n_jobs, prediction=True)
    return _by_row_blocks(xp, batch, X,
                          lambda trees, rows, _: kernels.tree_value_sums(xp, trees, values, rows, missing_bin),
                          kernels.csr_columns)


def predict_raw(xp, batch, values, X, missing_bin: int, base, n_jobs: int | None = None):
    """``base`` (n, K) plus every row's leaf value in every tree, with the fit's kernel set.

    Same contract as :func:`gputrees.kernels.reference.predict_raw` (tree
    ``r * K + c`` adds to column ``c``, in tree order: the sums of a fit's
    rounds); a sparse ``X`` as :func:`_by_row_blocks` walks it.
    """
    from .kernels import get_kernels

    kernels = get_kernels(xp, n_jobs=n_jobs, prediction=True)
    return _by_row_blocks(xp, batch, X, lambda trees, rows, part: kernels.predict_raw(xp, trees, values, rows,
                                                                                      missing_bin, base[part, :]),
                          kernels.csr_columns)


def _tested_batch(batch, X):
    """``(batch, X_cut)`` to walk a sparse ``X``: the batch with its features numbered in the columns its trees
    test, and the CSR matrix of those columns (gputrees._sparse)."""
    X_cut, feature = tested_columns(X, batch.feature)
    return dataclasses.replace(batch, feature=feature), X_cut


def _by_row_blocks(xp, batch, X, walk, csr_columns: int):
    """``walk(batch, X, rows)`` (``rows``: the slice of X's rows walked). A sparse (CSR) ``X`` is walked as it is
    by a kernel set that takes CSR rows up to its width (``csr_columns``), else cut to its tested columns
    (:func:`_tested_batch`), then walked as it is by a set that takes CSR rows or in dense blocks, the results
    stacked."""
    if not is_sparse(X):
        return walk(batch, X, slice(None))
    X = X.tocsr()  # (a CSR matrix itself)
    if X.shape[1] <= csr_columns:
        return walk(batch, X, slice(None))
    trees, X_cut = _tested_batch(batch, X)
    if csr_columns:
        return walk(trees, X_cut, slice(None))
    return xp.concat([walk(trees, block, slice(s, e)) for s, e, block in dense_blocks(X_cut)], axis=0)
