"""The leaderboard service; ``__version__`` is the installed package's (pyproject.toml)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("leaderboard")
except PackageNotFoundError:  # pragma: no cover - run from a tree that was never installed
    __version__ = "0+unknown"
