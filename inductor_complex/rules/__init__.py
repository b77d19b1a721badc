"""Real-pair rules, one module per family; importing this fills the table."""

from . import (  # noqa: F401
    arith,
    casts,
    construct,
    conv,
    creation,
    fft,
    indexing,
    inplace,
    inverse_trig,
    layout,
    linalg,
    log1p,
    logaddexp,
    losses,
    power,
    products,
    predicates,
    reductions,
    scatter,
    shapes,
    statistics,
    transcendental,
    trig,
)
from . import copies, foreach  # noqa: F401  (last: they reuse the rules above)
from .registry import DFT_RULES, LAZY_BITS, RULES, Unsupported, rule

__all__ = ["DFT_RULES", "LAZY_BITS", "RULES", "Unsupported", "rule"]
