"""Transactional ``fit``: a fit that raises leaves the estimator as it was.

A fit interrupted by an exception (a bad input found late, ``KeyboardInterrupt``,
``MemoryError``) must not leave a half-fitted estimator behind: an unfitted one
stays unfitted (``check_is_fitted`` raises), a fitted one keeps its previous
model (``warm_start`` included). :func:`transactional_fit` snapshots the
instance's attributes before the fit and puts them back if the fit raises.
"""

from __future__ import annotations

import copy
import functools


def _snapshot(est) -> dict:
    """The instance's attributes; lists and dicts copied (fits append to them in place)."""
    return {k: copy.copy(v) if isinstance(v, (list, dict)) else v for k, v in vars(est).items()}


def transactional_fit(fit):
    """Decorate a ``fit`` method so that an exception restores the prior state.

    Parameters
    ----------
    fit : callable
        ``fit(self, *args, **kwargs)``.

    Returns
    -------
    callable
        The same method; on any exception (``BaseException``, so
        ``KeyboardInterrupt`` too) the instance's ``__dict__`` is restored to
        its content before the call and the exception propagates unchanged.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        saved = _snapshot(self)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise

    return wrapper
