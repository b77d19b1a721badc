"""Real-pair rules, one module per family; importing this fills the table."""

from . import (  # noqa: F401
    arith,
    casts,
    construct,
    creation,
    indexing,
    inplace,  # noqa: F401  (after the out-of-place rules it wraps)
    linalg,
    predicates,
    reductions,
    shapes,
    transcendental,
)
from .registry import RULES, Unsupported, rule

__all__ = ["RULES", "Unsupported", "rule"]
