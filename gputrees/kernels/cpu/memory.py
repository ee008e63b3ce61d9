"""Loads and stores without Numba's index checks, software prefetch, vector adds: the kernels' memory access.

Intrinsics for the hot loops: :data:`at` / :data:`at1` / :data:`put1` read
and write array elements at indices known to be valid (no mapping of
negative indices), :func:`prefetch` hints a row into cache, :data:`add2` ..
:data:`add4` add a tuple of channels to a histogram bin as one vector
operation, :func:`take_next` is an atomic work counter.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# -- software prefetch -----------------------------------------------------------
#: Rows ahead whose data a sparse pass prefetches: a DRAM access (~100-200 ns
#: on the development machine) takes about as long as 16 rows' histogram
#: updates (28 features x 3 channels), so the line arrives as it is needed.
PREFETCH_AHEAD = 16
#: A node's rows are gathered with prefetching when consecutive rows lie more
#: than this many bytes apart on average in the row-major matrix: closer rows
#: fall on the same or the next cache line (64 bytes), which the hardware
#: prefetcher already fetches, and explicit prefetches only cost instructions.
SPARSE_GAP_BYTES = 128
#: ... and whenever they are not consecutive and the codes take more than this
#: many bytes: the codes and channels then no longer stay in the last-level
#: cache between passes, and each line comes from memory; smaller codes stay
#: in cache, where explicit prefetches only cost instructions.
PREFETCH_SPAN_BYTES = 8 << 20


@numba.njit(inline="always")
def sparse_rows(row, a, b, row_bytes, n_rows):
    """Whether the pairs ``a:b`` (rows increasing, of ``n_rows`` rows) are summed with prefetching.

    See :data:`SPARSE_GAP_BYTES` and :data:`PREFETCH_SPAN_BYTES`.
    """
    span = abs(row[b - 1] - row[a]) + 1
    return span * row_bytes > SPARSE_GAP_BYTES * (b - a) or (span > b - a and n_rows * row_bytes > PREFETCH_SPAN_BYTES)


@intrinsic
def prefetch(typingctx, arr, i):
    """Hint the CPU to load row ``i`` of the C-contiguous 2-D array ``arr`` into cache (``llvm.prefetch``)."""
    if not isinstance(arr, types.Array) or arr.ndim != 2 or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], sig.args[1], types.intp)
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer2(
            context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
            strides=cgutils.unpack_tuple(builder, ary.strides), layout=aryty.layout,
            inds=[idx, zero], wraparound=False, boundscheck=False,
        )
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch"
        )
        # read, keep in all cache levels, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, i), codegen


def _unchecked(ndim, store=False):
    """An intrinsic ``at(arr, i[, j[, k]])`` reading ``arr[i, ...]``, or (1-D) ``put(arr, i, v)`` writing ``arr[i]``.

    The indices are taken as they are. Numba's own indexing first maps a
    negative index of a signed type to the end of its axis (two or three
    instructions an index, on every load and store). A histogram's code
    load ``codes[r, f]`` with ``f`` from ``range(f0, f1)`` paid them at every
    update, a large share of so short a loop, and a partition's loads and
    stores of row indices and sides likewise. Only for indices known to be valid:
    from ``range`` over valid bounds or from arrays of valid indices (rows,
    features, bins).
    """

    def typer(arr, index, value=None):
        if not (isinstance(arr, types.Array) and arr.ndim == ndim and all(isinstance(t, types.Integer) for t in index)):
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            inds = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:1 + ndim], sig.args[1:1 + ndim])]
            ptr = cgutils.get_item_pointer2(
                context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
                strides=cgutils.unpack_tuple(builder, ary.strides), layout=aryty.layout, inds=inds,
                wraparound=False, boundscheck=False,
            )
            if not store:
                return context.unpack_value(builder, aryty.dtype, ptr)
            v = context.cast(builder, args[-1], sig.args[-1], aryty.dtype)
            context.pack_value(builder, aryty.dtype, v, ptr)
            return context.get_dummy_value()

        if store:
            return types.void(arr, *index, value), codegen
        return arr.dtype(arr, *index), codegen

    # an intrinsic's Python signature is its call's: one definition per form
    if (ndim, store) == (1, False):
        def at(typingctx, arr, i):
            return typer(arr, (i,))
    elif (ndim, store) == (2, False):
        def at(typingctx, arr, i, j):
            return typer(arr, (i, j))
    elif (ndim, store) == (3, False):
        def at(typingctx, arr, i, j, k):
            return typer(arr, (i, j, k))
    elif (ndim, store) == (1, True):
        def at(typingctx, arr, i, v):
            return typer(arr, (i,), v)
    else:
        raise ValueError(f"no unchecked {'store' if store else 'load'} of {ndim}-D arrays")
    return intrinsic(at)


at1 = _unchecked(1)
at = _unchecked(2)
at3 = _unchecked(3)
put1 = _unchecked(1, store=True)


@intrinsic
def take_next(typingctx, counter):
    """Atomically add 1 to ``counter[0]`` (a 1-D int64 array) and return its previous value.

    A work queue for parallel loops whose tasks differ widely in cost:
    ``prange`` over the workers, each taking the next task index until the
    tasks run out (Numba's ``prange`` hands each thread a fixed, equal share
    of the iterations, and ``set_parallel_chunksize`` does not change that
    with the OpenMP layer).
    """
    if not (isinstance(counter, types.Array) and counter.ndim == 1 and counter.dtype == types.int64):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(ary.data, ir.IntType(64).as_pointer())
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "monotonic")

    return types.int64(counter), codegen


def _vector_add(n_lanes):
    """An intrinsic ``add(out, s, f, b, w)``: ``out[s, f, b, 0:n_lanes] += w`` as one vector load, add and store.

    ``out`` is a C-contiguous 4-D float64 array whose last axis holds at
    least ``n_lanes`` values, ``w`` a tuple of ``n_lanes`` floats. Two lanes
    are one 128-bit vector; three and four one vector of four lanes, lanes
    past ``n_lanes`` masked off (neither read nor written). Each lane is the same IEEE addition as the scalar
    ``+=`` (bit-identical sums): one load and one store instead of
    ``n_lanes`` each.
    """

    @intrinsic
    def add(typingctx, out, s, f, b, w):
        if not (isinstance(out, types.Array) and out.ndim == 4 and out.dtype == types.float64
                and isinstance(w, types.UniTuple) and w.count == n_lanes):
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            inds = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:4], sig.args[1:4])]
            ptr = cgutils.get_item_pointer2(
                context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
                strides=cgutils.unpack_tuple(builder, ary.strides), layout=aryty.layout,
                inds=inds + [context.get_constant(types.intp, 0)], wraparound=False, boundscheck=False,
            )
            dbl, i32 = ir.DoubleType(), ir.IntType(32)
            width = 2 if n_lanes == 2 else 4
            vec = ir.VectorType(dbl, width)
            vptr = builder.bitcast(ptr, vec.as_pointer())
            wv = ir.Constant(vec, [0.0] * width)
            for k, x in enumerate(cgutils.unpack_tuple(builder, args[4], n_lanes)):
                wv = builder.insert_element(wv, context.cast(builder, x, sig.args[4].dtype, types.float64), i32(k))
            if n_lanes == width:
                builder.store(builder.fadd(builder.load(vptr, align=8), wv), vptr, align=8)
                return context.get_dummy_value()
            mask_t = ir.VectorType(ir.IntType(1), 4)
            mask = ir.Constant(mask_t, [1] * n_lanes + [0] * (4 - n_lanes))
            load = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vec, [vec.as_pointer(), i32, mask_t, vec]),
                "llvm.masked.load.v4f64.p0v4f64",
            )
            store = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [vec, vec.as_pointer(), i32, mask_t]),
                "llvm.masked.store.v4f64.p0v4f64",
            )
            cur = builder.call(load, [vptr, i32(8), mask, ir.Constant(vec, [0.0] * 4)])
            builder.call(store, [builder.fadd(cur, wv), vptr, i32(8), mask])
            return context.get_dummy_value()

        return types.void(out, s, f, b, w), codegen

    return add


add2 = _vector_add(2)
add3 = _vector_add(3)
add4 = _vector_add(4)


def row_bytes(codes, n_channels: int = 0) -> int:
    """Bytes a histogram pass reads a row: its codes, and its ``n_channels`` float64 channels where the pass reads
    them at the same row (:func:`sparse_rows`' ``row_bytes``). A boosting pass reads a row's channels with its
    codes: counted, a 500k-row shard's deep nodes (6 features: 6 bytes of codes, 24 of channels) are prefetched,
    twice as fast as left to the hardware."""
    return int(codes.shape[1]) * int(codes.dtype.itemsize) + 8 * int(n_channels)


def float_rows(X):
    """``X`` C-contiguous, float32 kept as it is (it compares with float64 thresholds as its float64 copy would),
    as a read-only view (:func:`read_only`)."""
    return read_only(np.ascontiguousarray(X, dtype=X.dtype if X.dtype in (np.float32, np.float64) else np.float64))


def read_only(a):
    """A read-only view of ``a`` (no copy), for a kernel that only reads it.

    Numba compiles a kernel once per argument type, and a read-only array
    (a memmap, scikit-learn's read-only checks, a loaded model's arrays) is
    another type than a writable one: passing every input read-only gives
    one compilation for both.
    """
    view = a.view()
    view.flags.writeable = False
    return view


def as_int64(a):
    return np.ascontiguousarray(a, dtype=np.int64)
