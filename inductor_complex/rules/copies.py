"""The ``*_copy`` forms of view ops (``view_copy``, ``permute_copy``,
``view_as_real_copy``, ...), which functional programs (ExecuTorch's Edge
dialect) hold instead of views: the view's rule, then a contiguous copy, as
eager's ``*_copy`` returns a contiguous tensor of its own."""

from __future__ import annotations

import torch

from ..values import Pair
from .registry import LAZY_BITS, RULES, Unsupported, keep_bits, rule, toggle_conj, toggle_neg

# view op (its rule) → the name of its copy form
_VIEWS = {
    "view": "view_copy", "reshape": "_reshape_copy", "expand": "expand_copy", "permute": "permute_copy",
    "transpose": "transpose_copy", "t": "t_copy", "unsqueeze": "unsqueeze_copy", "squeeze": "squeeze_copy",
    "slice": "slice_copy", "select": "select_copy", "diagonal": "diagonal_copy", "alias": "alias_copy",
    "detach": "detach_copy", "unfold": "unfold_copy", "split": "split_copy", "unbind": "unbind_copy",
    "view_as_real": "view_as_real_copy", "view_as_complex": "view_as_complex_copy",
    "as_strided": "as_strided_copy",
    # conj's rule only moves data (the bit it sets is the op); its copy is physical
    "conj_physical": "_conj_copy",
}


def _copied(value):
    if isinstance(value, Pair):
        return value.with_data(value.data.clone(memory_format=torch.contiguous_format))
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value.clone(memory_format=torch.contiguous_format)


def _copy_form(view_rule):
    def copy_rule(*args, out, **kwargs):
        return _copied(view_rule(*args, out=out, **kwargs))

    copy_rule.__name__ = f"{view_rule.__name__}_copy"
    return copy_rule


for _view, _copy in _VIEWS.items():
    # (Called on values read with their bits applied, a view's rule computes
    # its value, except a rule whose whole op is the bit it sets.)
    if _view in RULES and _copy not in RULES and LAZY_BITS.get(_view) not in (toggle_conj, toggle_neg):
        rule(_copy)(_copy_form(RULES[_view]))


def _memory_format(dim_order, ndim: int):
    """ExecuTorch's ``dim_order`` as a memory format: none given keeps the layout."""
    if dim_order is None:
        return torch.preserve_format
    if list(dim_order) == list(range(ndim)):
        return torch.contiguous_format
    raise Unsupported(f"dim_order={list(dim_order)} (not contiguous)")


# ExecuTorch's forms of `_to_copy` and `clone`, which name a dim order, not a memory format.
@rule("_to_dim_order_copy", lazy_bits=keep_bits)
def to_dim_order_copy(x, *, dim_order=None, out, **kwargs):
    return RULES["_to_copy"](x, out=out, memory_format=_memory_format(dim_order, out.ndim))


@rule("_clone_dim_order", lazy_bits=keep_bits)
def clone_dim_order(z, *, non_blocking=False, dim_order=None, out):
    return RULES["clone"](z, memory_format=_memory_format(dim_order, out.ndim), out=out)
