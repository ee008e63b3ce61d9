"""Small datasets shipped with gputrees (no network access needed)."""

from ._titanic import load_titanic

__all__ = ["load_titanic"]
