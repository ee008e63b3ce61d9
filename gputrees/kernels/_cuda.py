"""GPU kernels written with numba-cuda, behind the same contracts as the reference ones.

This module is imported only when the ``"cuda"`` kernel set is selected
(:func:`gputrees.kernels.get_kernels`); every kernel is compiled by
``numba.cuda.jit`` at its first launch for the argument types it meets, never
at import. On a GPU the kernels are launched directly on CuPy arrays (numba
reads their ``__cuda_array_interface__``; nothing is copied). Under
numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1`` set before numba.cuda is
first imported) the same kernel source runs on the CPU on NumPy arrays, one
Python thread per CUDA thread: that is how CI, which has no GPU, checks these
kernels against the reference ones.

Kernels:

* :func:`node_histograms` / :func:`node_sums`: one task per (slot, feature
  group, chunk of the slot's rows); a CUDA block accumulates a task's
  histogram in shared memory (atomics on shared memory), then adds it to the
  output in global memory. Feature groups are sized so that
  ``group * n_bins * n_channels`` words fit the block's shared array
  (:data:`SHARED_WORDS`); when one feature's ``n_bins * n_channels`` does not
  fit, a second kernel adds every pair straight into global memory (atomics
  on global memory). A slot's rows are read from the run ``[first, last)`` of
  positions holding its pairs (a small kernel finds it): the grower's pairs
  are grouped by node (:func:`route_rows` regroups them), so a slot's run
  holds only its own pairs; pairs of other slots inside a run are skipped, so
  the result is right for any order.
* :func:`route_rows`: one thread per pair, then a stable sort by node on the
  device (the pairs come back grouped by node, each node's pairs in their
  previous order, as the Numba set does).
* :func:`apply_trees`: one thread per (row, tree) of a padded forest, a loop
  over depth (the device function :func:`leaf_of`); its split rule is the
  device function :func:`goes_left` (the GPU TreeSHAP kernel's too).
* :func:`predict_raw`: one thread per (row, output) walks its trees in round
  order and adds their leaf values; a block first copies its chunk of rows
  into shared memory (coalesced reads), where enough rows fit, so that each
  split reads its value there rather than by a scattered global load.

Sums. With ``scale`` (the quantised mode, :mod:`gputrees.kernels._quantise`),
every pair's channel value times ``scale[c]`` is an integer (the caller
quantised it), added as int64: integer addition is associative, so the
result does not depend on the order the atomics land in and GPU fits are
bit-identical run after run. The int64 sums are converted to float64 and
divided by ``scale`` (a power of two: exact) on the way out. Without
``scale`` the sums are float64 atomics: exact, hence order-independent, for
integer-valued channels (counts, one-hot classes, integer weights), and
otherwise equal to the reference to float rounding (not bit-identical from
run to run).

Host synchronisations: none. Every launch size comes from array shapes the
host already knows (number of pairs, slots, features, bins, channels); the
outputs stay on the device; the kernels go on CuPy's current stream without
numba's default synchronisation on ``__cuda_array_interface__`` arguments
(see :func:`_launch`).
"""

from __future__ import annotations

import functools
import math
import os

import numba
from numba import cuda

from .._records import ActiveRows
from .cuda_launch import Launcher
from .gpu.rules import compile_rules
from .rules import category_column

__all__ = [
    "SHARED_WORDS",
    "apply_trees",
    "device_views",
    "fixed_point",
    "goes_left",
    "grid_blocks",
    "launch",
    "launch_config",
    "leaf_of",
    "node_histograms",
    "node_sums",
    "pair_weight",
    "predict_raw",
    "route_rows",
]

#: Words (8 bytes) of a block's shared histogram: 48 KiB, the static shared
#: memory a CUDA block may use on every GPU since compute capability 2.0.
SHARED_WORDS = 6144
#: Rows a histogram task reads per thread of its block (on average): enough
#: rows per task to amortise zeroing and flushing the shared histogram, which
#: costs ``group * n_bins * n_channels`` words, against ``rows * group``
#: code reads.
ROWS_PER_THREAD = 16


def _simulated() -> bool:
    return bool(numba.config.ENABLE_CUDASIM)


def launch_config() -> tuple[int, int]:
    """(threads per block, most blocks per launch).

    On a GPU: 256 threads (8 warps, a common occupancy sweet spot) and up to
    65,535 blocks (kernels loop over their work with a grid stride beyond
    that). In the simulator every CUDA thread is a Python thread (slow to
    start), so launches use one warp of 32 threads and at most 2
    blocks: the grid-stride loops then cover all the work, and the blocks
    still meet the inter-block atomics.
    """
    if _simulated():
        return 32, 2
    return 256, 65535


def _blocks(work: int, threads: int, cap: int) -> int:
    return max(1, min(cap, -(-work // threads)))


def grid_blocks(work: int, threads: int, cap: int) -> int:
    """Blocks of ``threads`` for ``work`` items, at most ``cap`` (the kernels loop with a grid stride beyond)."""
    return _blocks(work, threads, cap)


def launch(kernel, blocks: int, threads: int, *args, shared_bytes: int = 0):
    """Launch ``kernel`` as :func:`_launch` does (the public name, for the kernel modules of :mod:`.gpu`)."""
    _launch(kernel, blocks, threads, *args, shared_bytes=shared_bytes)


def _launch(kernel, blocks: int, threads: int, *args, shared_bytes: int = 0):
    """Launch ``kernel`` on CuPy's current stream (GPU) or in the simulator (NumPy arrays), with
    ``shared_bytes`` of dynamic shared memory a block.

    On a GPU every array argument is handed to numba as a view of its
    ``__cuda_array_interface__`` with ``sync=False``: by default numba
    synchronises the host with the stream named in the interface before
    every launch, which would put a host synchronisation in every kernel call.
    The launch goes on CuPy's current stream, so it runs after the CuPy work
    that produced its inputs and before the CuPy work that reads its outputs.
    A kernel's later launches with arguments of the same kinds skip numba-cuda's
    per-call handling (:class:`gputrees.kernels.cuda_launch.Launcher`).
    """
    if _simulated():
        _run(kernel[blocks, threads, 0, shared_bytes], args)
        return
    import cupy

    stream = _numba_stream(cupy.cuda.get_current_stream().ptr)

    def through_numba():
        views = device_views(*args)
        _run(kernel[blocks, threads, stream, shared_bytes], views)
        return views

    if os.environ.get("GPUTREES_DIRECT_LAUNCH", "1") == "0":  # numba-cuda's launch every time (to compare)
        through_numba()
    else:
        _LAUNCHER(kernel, blocks, threads, stream, shared_bytes, args, through_numba)


#: the GPU's launches after a kernel's first (:mod:`gputrees.kernels.cuda_launch`)
_LAUNCHER = Launcher()


@functools.lru_cache(maxsize=64)
def _numba_stream(ptr: int):
    """numba's handle of the CUDA stream at ``ptr`` (CuPy's current stream), made once a stream."""
    return cuda.external_stream(ptr) if ptr else cuda.default_stream()


def device_views(*args) -> tuple:
    """``args`` as a launch hands them to numba-cuda: each device array (CuPy's) as a view of its
    ``__cuda_array_interface__`` made without a host synchronisation (see :func:`_launch`), views already
    made and anything else as they are; in the simulator everything as it is. (A view costs tens of
    microseconds of host time: only a kernel's first launch for a kind of arguments makes them, see
    :func:`_launch`.)
    """
    if _simulated():
        return args
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return tuple(
        a if isinstance(a, DeviceNDArray) or not hasattr(a, "__cuda_array_interface__")
        else cuda.from_cuda_array_interface(a.__cuda_array_interface__, owner=a, sync=False)
        for a in args
    )


def _run(configured, args) -> None:
    """Call a configured kernel; a NumPy too new for the installed numba-cuda gets an error that says so.

    numba-cuda 0.30 registers an overload of ``np.row_stack`` when it first
    compiles a kernel, and NumPy 2.5 removed that function: the first launch
    then raised ``AttributeError: module 'numpy' has no attribute
    'row_stack'`` from deep inside numba-cuda (seen on an H100 with NumPy
    2.5.2 and numba-cuda 0.30.4).
    """
    try:
        configured(*args)
    except AttributeError as exc:
        if "module 'numpy' has no attribute" not in str(exc):
            raise
        import importlib.metadata

        import numpy

        try:
            version = importlib.metadata.version("numba-cuda")
        except importlib.metadata.PackageNotFoundError:
            version = "(version unknown)"
        raise RuntimeError(
            f"numba-cuda {version} cannot compile gputrees' GPU kernels with NumPy {numpy.__version__} "
            f"({exc}): install a NumPy that this numba-cuda supports (numba-cuda 0.30 works with "
            f"NumPy 2.4, not 2.5), or a numba-cuda release made for NumPy {numpy.__version__}"
        ) from exc


# -- kernels (compiled at first launch) -----------------------------------------
@functools.cache
def _runs_kernel():
    @cuda.jit
    def runs(node, slot_of_node, first, last):
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for i in range(start, node.shape[0], step):
            s = slot_of_node[node[i]]
            if s >= 0:
                cuda.atomic.min(first, s, i)
                cuda.atomic.max(last, s, i + 1)

    return runs


@cuda.jit(device=True)
def pair_weight(chan, ci, c, i, mult, wmult, mode):
    """Channel ``c`` of pair ``i`` (channel row ``ci``) with its multiplicities: mode 0 none, 1 ``mult`` on
    every channel, 2 ``mult`` on the count and ``wmult`` on the others."""
    w = chan[ci, c]
    if mode == 1 or (mode == 2 and c == 0):
        w = w * mult[i]
    elif mode == 2:
        w = w * wmult[i]
    return w


@cuda.jit(device=True)
def fixed_point(w, s):
    """A channel value as its int64 multiple of ``1 / s`` (rounded half up: exact for quantised values)."""
    return numba.int64(math.floor(w * s + 0.5))


@functools.cache
def _shared_kernel(integer: bool):
    """Shared-memory histogram kernel, int64 (quantised) or float64 accumulators."""
    acc = numba.int64 if integer else numba.float64

    @cuda.jit
    def hist(codes, row, chan_index, node, mult, wmult, mode, chan, scale, slot_of_node, first, last,
             n_features, n_bins, group, n_groups, chunks, sums_only, out):
        sh = cuda.shared.array(SHARED_WORDS, acc)
        tid = cuda.threadIdx.x
        nthreads = cuda.blockDim.x
        n_channels = chan.shape[1]
        cell = n_bins * n_channels
        n_tasks = first.shape[0] * n_groups * chunks
        for task in range(cuda.blockIdx.x, n_tasks, cuda.gridDim.x):
            s = task // (n_groups * chunks)
            g = (task // chunks) % n_groups
            c = task % chunks
            f0 = g * group
            f1 = min(n_features, f0 + group)
            width = (f1 - f0) * cell
            for j in range(tid, width, nthreads):
                sh[j] = 0
            cuda.syncthreads()
            a = first[s]
            e = last[s]
            size = max(0, e - a)
            per = (size + chunks - 1) // chunks
            r0 = a + c * per
            r1 = min(e, r0 + per)
            for i in range(r0 + tid, r1, nthreads):
                if slot_of_node[node[i]] == s:
                    r = row[i]
                    ci = chan_index[i]
                    for f in range(f0, f1):
                        # int64: in the simulator a uint8 code times a Python int stays uint8 (NumPy 2)
                        b = 0 if sums_only else numba.int64(codes[r, f])
                        base = (f - f0) * cell + b * n_channels
                        for k in range(n_channels):
                            w = pair_weight(chan, ci, k, i, mult, wmult, mode)
                            if integer:
                                cuda.atomic.add(sh, base + k, fixed_point(w, scale[k]))
                            else:
                                cuda.atomic.add(sh, base + k, w)
            cuda.syncthreads()
            for j in range(tid, width, nthreads):
                v = sh[j]
                if v != 0:
                    cuda.atomic.add(out, (s * n_features + f0) * cell + j, v)
            cuda.syncthreads()

    return hist


@functools.cache
def _global_kernel(integer: bool):
    """Histogram kernel adding every pair straight into global memory (bins x channels too big to share)."""

    @cuda.jit
    def hist(codes, row, chan_index, node, mult, wmult, mode, chan, scale, slot_of_node, n_features, n_bins,
             sums_only, out):
        n_channels = chan.shape[1]
        cell = n_bins * n_channels
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for i in range(start, row.shape[0], step):
            s = slot_of_node[node[i]]
            if s < 0:
                continue
            r = row[i]
            ci = chan_index[i]
            for f in range(n_features):
                b = 0 if sums_only else numba.int64(codes[r, f])  # (see _shared_kernel)
                base = (s * n_features + f) * cell + b * n_channels
                for k in range(n_channels):
                    w = pair_weight(chan, ci, k, i, mult, wmult, mode)
                    if integer:
                        cuda.atomic.add(out, base + k, fixed_point(w, scale[k]))
                    else:
                        cuda.atomic.add(out, base + k, w)

    return hist


@functools.cache
def _route_kernel():
    @cuda.jit
    def route(codes, row, node, slot_of_node, feature, bin_, missing_left, is_cat, cat_left, any_cat,
              first_child, missing_bin, out):
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for i in range(start, row.shape[0], step):
            s = slot_of_node[node[i]]
            if s < 0:
                out[i] = node[i]
                continue
            code = numba.int64(codes[row[i], feature[s]])
            if code == missing_bin:
                left = missing_left[s]
            elif any_cat and is_cat[s]:
                left = cat_left[s, code]
            else:
                left = code <= bin_[s]
            out[i] = first_child + 2 * s + (0 if left else 1)

    return route


@cuda.jit(device=True)
def goes_left(row, t, nd, feature, threshold, missing_left, is_cat, cat_left, any_cat, missing_bin):
    """Whether a row (its features ``row``, a 1-d view: of ``X`` or of a block's shared copy) goes to the left
    child of internal node ``nd`` of tree ``t`` (prediction's rule)."""
    x = row[feature[t, nd]]
    missing = math.isnan(x)
    go_left = x <= threshold[t, nd]
    if any_cat and is_cat[t, nd]:
        code = missing_bin if missing else int(x)
        go_left = cat_left[t, nd, category_column(code, cat_left.shape[2])]
        missing = missing or code == missing_bin
    if missing:
        go_left = missing_left[t, nd]
    return go_left


@cuda.jit(device=True)
def leaf_of(row, t, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat, max_depth,
            missing_bin):
    """The leaf a row (``row``, as :func:`goes_left` takes it) reaches in tree ``t`` of a padded batch (at most
    ``max_depth`` steps)."""
    nd = 0
    for _ in range(max_depth):
        if feature[t, nd] < 0:
            break
        go_left = goes_left(row, t, nd, feature, threshold, missing_left, is_cat, cat_left, any_cat, missing_bin)
        nd = left[t, nd] if go_left else right[t, nd]
    return nd


@functools.cache
def _apply_kernel():
    @cuda.jit
    def apply(X, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat, max_depth,
              missing_bin, out):
        n_trees = left.shape[0]
        total = X.shape[0] * n_trees
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for idx in range(start, total, step):
            i = idx // n_trees
            t = idx % n_trees
            out[i, t] = leaf_of(X[i], t, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat,
                                max_depth, missing_bin)

    return apply


@functools.cache
def _predict_raw_kernel():
    @cuda.jit
    def predict(X, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat, max_depth,
                missing_bin, values, raw):
        n_trees = left.shape[0]
        n, k = raw.shape
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for idx in range(start, n * k, step):
            i = idx // k
            c = idx - i * k
            raw[i, c] = _tree_sum(X[i], c, k, n_trees, raw[i, c], left, right, feature, threshold, missing_left,
                                  is_cat, cat_left, any_cat, max_depth, missing_bin, values)

    return predict


@functools.cache
def _predict_raw_staged_kernel():
    @cuda.jit
    def predict(X, rows, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat, max_depth,
                missing_bin, values, raw):
        # a chunk of ``rows`` rows copied into the block's shared memory with
        # coalesced reads, then walked from there: each split reads its row's
        # value from shared memory instead of a scattered global load
        staged = cuda.shared.array(0, dtype=numba.float64)
        n_trees = left.shape[0]
        n, k = raw.shape
        n_features = X.shape[1]
        tid = cuda.threadIdx.x
        for chunk in range(cuda.blockIdx.x, (n + rows - 1) // rows, cuda.gridDim.x):
            first = chunk * rows
            m = min(rows, n - first)
            for j in range(tid, m * n_features, cuda.blockDim.x):
                r = j // n_features
                staged[j] = X[first + r, j - r * n_features]
            cuda.syncthreads()
            if tid < m * k:
                r = tid // k
                c = tid - r * k
                i = first + r
                row = staged[r * n_features:(r + 1) * n_features]
                raw[i, c] = _tree_sum(row, c, k, n_trees, raw[i, c], left, right, feature, threshold, missing_left,
                                      is_cat, cat_left, any_cat, max_depth, missing_bin, values)
            cuda.syncthreads()

    return predict


@cuda.jit(device=True)
def _tree_sum(row, c, k, n_trees, acc, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat,
              max_depth, missing_bin, values):
    """``acc`` plus the leaf values of output ``c``'s trees (``c``, ``c + k``, ...: round after round) at a row."""
    for t in range(c, n_trees, k):
        acc += values[t, leaf_of(row, t, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat,
                                 max_depth, missing_bin)]
    return acc


#: Threads of a block of the staged prediction (:func:`predict_raw`): 128 rows of 28 float64 features
#: stage 28 KiB, so that several blocks share an SM
STAGED_THREADS = 128
#: Shared memory a staged block may take: 48 KiB, what every GPU grants without opting in
STAGED_BYTES = 48 * 1024
#: Fewest rows a staged chunk holds (more outputs, fewer rows): fewer, and the copies and synchronisations
#: cost more than the scattered reads they save
STAGED_MIN_ROWS = 8


# -- host wrappers ----------------------------------------------------------------
def _i64(xp, a):
    return xp.astype(a, xp.int64, copy=False)


def _f64(xp, a):
    return xp.astype(a, xp.float64, copy=False)


def _mults(xp, active):
    """(mult, wmult, mode): one-element placeholders stand for None; mode 0 none, 1 mult, 2 both."""
    dummy = xp.zeros(1, dtype=xp.float64)
    if active.mult is None:
        return dummy, dummy, 0
    if active.wmult is None:
        return _f64(xp, active.mult), dummy, 1
    return _f64(xp, active.mult), _f64(xp, active.wmult), 2


def _accumulate(xp, codes, active, chan, slot_of_node, n_slots, n_features, n_bins, sums_only, scale,
                rows_per_task, shared_words):
    """Flat sums (n_slots * n_features * n_bins * n_channels,), float64 (int64 sums divided by ``scale``)."""
    n_channels = int(chan.shape[1])
    integer = scale is not None
    size = n_slots * n_features * n_bins * n_channels
    out = xp.zeros(size, dtype=xp.int64 if integer else xp.float64)
    m = int(active.row.shape[0])  # a shape: known on the host, no synchronisation
    if m > 0 and n_slots > 0:
        threads, cap = launch_config()
        mult, wmult, mode = _mults(xp, active)
        row, node = _i64(xp, active.row), _i64(xp, active.node)
        chan_index = _i64(xp, active.chan_index)
        table = _i64(xp, slot_of_node)
        chan = _f64(xp, chan)
        if not chan.flags.c_contiguous:
            # a block of a table's columns (boosting's [G, H]): one contiguous
            # copy, as the simulator's transfers need (n x C floats, per call)
            chan = xp.asarray(chan, copy=True)
        scale_dev = xp.asarray(scale if integer else [1.0] * n_channels, dtype=xp.float64)
        if not sums_only:
            codes_dev = codes
        else:
            codes_dev = xp.zeros((1, 1), dtype=xp.uint8)
        words = SHARED_WORDS if shared_words is None else min(int(shared_words), SHARED_WORDS)
        group = min(n_features, words // (n_bins * n_channels))
        if group == 0:
            # one feature's bins x channels exceed the shared array: global atomics
            _launch(
                _global_kernel(integer), _blocks(m, threads, cap), threads, codes_dev, row, chan_index, node, mult,
                wmult, mode, chan, scale_dev, table, n_features, n_bins, sums_only, out,
            )
        else:
            first = xp.full(n_slots, m, dtype=xp.int64)
            last = xp.zeros(n_slots, dtype=xp.int64)
            _launch(_runs_kernel(), _blocks(m, threads, cap), threads, node, table, first, last)
            n_groups = -(-n_features // group)
            per_task = threads * ROWS_PER_THREAD if rows_per_task is None else int(rows_per_task)
            # chunks per slot: the pairs spread over the slots' tasks (the
            # slots' sizes are on the device; their mean is known here)
            chunks = max(1, -(-m // (n_slots * max(1, per_task))))
            n_tasks = n_slots * n_groups * chunks
            _launch(
                _shared_kernel(integer), min(cap, n_tasks), threads, codes_dev, row, chan_index, node, mult, wmult,
                mode, chan, scale_dev, table, first, last, n_features, n_bins, group, n_groups, chunks, sums_only, out,
            )
    if integer:
        inv = xp.asarray([1.0 / s for s in scale], dtype=xp.float64)
        return xp.reshape(xp.reshape(xp.astype(out, xp.float64), (-1, n_channels)) * inv, (-1,))
    return out


def _check_scale(scale, n_channels):
    if scale is None:
        return None
    scale = [float(s) for s in scale]
    if len(scale) != n_channels:
        raise ValueError(f"scale has {len(scale)} entries, the channels {n_channels}")
    for s in scale:
        if not (s > 0 and math.frexp(s)[0] == 0.5):
            raise ValueError(f"quantisation scales must be positive powers of two, got {s!r}")
    return scale


def node_histograms(xp, codes, active, chan, slot_of_node, n_slots: int, n_bins: int, *, scale=None,
                    rows_per_task=None, shared_words=None):
    """Same contract as :func:`gputrees.kernels.reference.node_histograms`.

    Parameters
    ----------
    codes : array of shape (n_samples, n_features), uint8 or uint16
    active : ActiveRows
    chan : array of shape (n_chan_rows, n_channels), float64
    slot_of_node : array of shape (n_nodes,), int64
    n_slots, n_bins : int
    scale : sequence of n_channels floats (powers of two) or None
        Quantised mode: ``chan * scale`` (times the multiplicities) is integer
        valued; sums are int64, divided by ``scale`` at the end.
    rows_per_task, shared_words : int or None
        Overrides of the pairs per task (default ``threads *
        ROWS_PER_THREAD``) and of the shared words a block may use (default,
        and at most, :data:`SHARED_WORDS`); the tests shrink them to reach
        the chunked and global-memory paths on tiny inputs.

    Returns
    -------
    hist : array of shape (n_slots, n_features, n_bins, n_channels), float64
    """
    n_slots, n_bins = int(n_slots), int(n_bins)
    n_features = int(codes.shape[1])
    scale = _check_scale(scale, int(chan.shape[1]))
    flat = _accumulate(xp, codes, active, chan, slot_of_node, n_slots, n_features, n_bins, False, scale,
                       rows_per_task, shared_words)
    return xp.reshape(flat, (n_slots, n_features, n_bins, int(chan.shape[1])))


def node_sums(xp, active, chan, slot_of_node, n_slots: int, *, scale=None, rows_per_task=None, shared_words=None):
    """Same contract as :func:`gputrees.kernels.reference.node_sums`: array (n_slots, n_channels), float64.

    The histogram kernel with one feature of one bin; ``scale`` and the
    overrides as in :func:`node_histograms`.
    """
    n_slots = int(n_slots)
    scale = _check_scale(scale, int(chan.shape[1]))
    flat = _accumulate(xp, None, active, chan, slot_of_node, n_slots, 1, 1, True, scale, rows_per_task, shared_words)
    return xp.reshape(flat, (n_slots, int(chan.shape[1])))


def build_histograms(xp, codes, rows, node, weights, n_nodes: int, n_bins: int, *, scale=None):
    """Same contract as :func:`gputrees.kernels.reference.build_histograms` (one channel row per row)."""
    m = int(rows.shape[0])
    active = ActiveRows(row=rows, chan_index=xp.arange(m, dtype=xp.int64), node=node)
    table = xp.arange(int(n_nodes), dtype=xp.int64)
    return node_histograms(xp, codes, active, weights, table, n_nodes, n_bins, scale=scale)


def route_rows(xp, codes, active, slot_of_node, split, first_child: int, missing_bin: int):
    """Same contract as :func:`gputrees.kernels.reference.route_rows`; the pairs come back grouped by node.

    One thread per pair computes its node; a stable sort by node id (on the
    device) then groups the pairs, each node's pairs in their previous order.
    """
    m = int(active.row.shape[0])
    if m == 0:
        return active
    threads, cap = launch_config()
    node = _i64(xp, active.node)
    new = xp.empty(m, dtype=xp.int64)
    cat_left = split.cat_left
    any_cat = int(cat_left.shape[-1]) > 0
    if not any_cat:
        cat_left = xp.zeros((1, 1), dtype=xp.bool)
    _launch(
        _route_kernel(), _blocks(m, threads, cap), threads, codes, _i64(xp, active.row), node, _i64(xp, slot_of_node),
        _i64(xp, split.feature), _i64(xp, split.bin), split.missing_left, split.is_categorical, cat_left, any_cat,
        int(first_child), int(missing_bin), new,
    )
    order = xp.argsort(new, stable=True)

    def take(a):
        return None if a is None else xp.take(a, order)

    return ActiveRows(
        row=take(active.row), chan_index=take(active.chan_index), node=xp.take(new, order),
        mult=take(active.mult), wmult=take(active.wmult), key=take(active.key),
    )


def apply_trees(xp, batch, X, missing_bin: int):
    """Same contract as :func:`gputrees.kernels.reference.apply_trees`: one thread per (row, tree)."""
    n = int(X.shape[0])
    n_trees = int(batch.left.shape[0])
    out = xp.zeros((n, n_trees), dtype=xp.int64)
    if n == 0 or n_trees == 0:
        return out
    threads, cap = launch_config()
    _launch(_apply_kernel(), _blocks(n * n_trees, threads, cap), threads, _f64(xp, X), *_walk_arrays(xp, batch),
            int(missing_bin), out)
    return out


def predict_raw(xp, batch, values, X, missing_bin: int, base):
    """Same contract as :func:`gputrees.kernels.reference.predict_raw`: one thread per (row, output) walks
    its trees in round order and adds their leaf values as it goes (no (rows, trees) array of leaves), so
    the sums equal the reference's bit for bit."""
    raw = xp.asarray(base, dtype=xp.float64, copy=True)
    n, k = int(raw.shape[0]), int(raw.shape[1])
    if n == 0 or int(batch.left.shape[0]) == 0:
        return raw
    threads, cap = launch_config()
    X = _f64(xp, X)
    staged_threads = min(STAGED_THREADS, threads)
    rows = min(staged_threads // k, STAGED_BYTES // (8 * max(1, int(X.shape[1]))))
    if rows >= STAGED_MIN_ROWS:
        _launch(_predict_raw_staged_kernel(), _blocks(n, rows, cap), staged_threads, X, rows,
                *_walk_arrays(xp, batch), int(missing_bin), _f64(xp, values), raw,
                shared_bytes=8 * rows * int(X.shape[1]))
        return raw
    _launch(_predict_raw_kernel(), _blocks(n * k, threads, cap), threads, X, *_walk_arrays(xp, batch),
            int(missing_bin), _f64(xp, values), raw)
    return raw


def _walk_arrays(xp, batch):
    """A padded batch's arrays as the walking kernels take them (a one-element ``cat_left`` without
    categorical splits), then ``any_cat`` and the batch's depth."""
    compile_rules()  # (goes_left's category_column)
    cat_left = batch.cat_left
    any_cat = cat_left.ndim == 3 and int(cat_left.shape[-1]) > 0
    if not any_cat:
        cat_left = xp.zeros((1, 1, 1), dtype=xp.bool)
    return (_i64(xp, batch.left), _i64(xp, batch.right), _i64(xp, batch.feature), _f64(xp, batch.threshold),
            batch.missing_left, batch.is_categorical, cat_left, any_cat, int(batch.max_depth))
