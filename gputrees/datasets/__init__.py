"""Small datasets shipped with gputrees (no network access needed)."""

from ._hitters import load_hitters
from ._titanic import load_titanic

__all__ = ["load_hitters", "load_titanic"]
