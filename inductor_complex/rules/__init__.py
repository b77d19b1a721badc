"""Real-pair rules, one module per family; importing this fills the table."""

from . import casts, construct, indexing, shapes, arith, elementwise, reductions, creation, linalg  # noqa: F401  (registration)
from .registry import RULES, Unsupported, rule

__all__ = ["RULES", "Unsupported", "rule"]
