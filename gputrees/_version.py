"""The package version (one place: the package, its model files and the CLI read it)."""

__version__ = "0.1.0"
