"""The rules of :mod:`gputrees.kernels.rules` made callable from CUDA kernels.

On a GPU each rule is registered with numba-cuda's extension API, so that a
kernel's call compiles it as a device function (with the kernel's compute
capability). Under the simulator the kernels are Python and call the rules
as they are: nothing to register.
"""

from __future__ import annotations

import functools
from types import FunctionType

import numba

from .. import rules


@functools.cache
def compile_rules() -> None:
    """Register every rule for the CUDA target (once; nothing under the simulator)."""
    if numba.config.ENABLE_CUDASIM:
        return
    from numba.cuda.extending import overload

    for fn in vars(rules).values():
        if isinstance(fn, FunctionType) and fn.__module__ == rules.__name__:
            overload(fn, strict=False)(lambda *args, _fn=fn: _fn)
