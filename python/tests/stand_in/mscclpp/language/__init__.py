"""Stand-in for ``mscclpp.language``: AlgoSpec, as the package exports it."""

from .utils import AlgoSpec  # noqa: F401
