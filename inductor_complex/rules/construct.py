"""Where complex values are made and taken apart: the pair tensor itself."""

from __future__ import annotations

import torch

from ..values import Pair
from .common import fake, require_complex_out
from .registry import Unsupported, rule


@rule("view_as_complex")
def view_as_complex(x, *, out):
    # The real `[..., 2]` tensor already is the pair: no op at all.
    return Pair(x, out.dtype, out.ndim)


@rule("view_as_real")
def view_as_real(z: Pair, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("view_as_real of a real tensor")
    return z.data


@rule("polar")
def polar(abs, angle, *, out):
    require_complex_out(out)
    return Pair(torch.stack((abs * torch.cos(angle), abs * torch.sin(angle)), -1), out.dtype, out.ndim)


@rule("complex")
def complex_(real, imag, *, out):
    require_complex_out(out)
    if fake(real).shape != fake(imag).shape:
        real, imag = torch.broadcast_tensors(real, imag)
    return Pair(torch.stack((real, imag), -1), out.dtype, out.ndim)


@rule("real")
def real(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("real of a real tensor")
    return z.re


@rule("imag")
def imag(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("imag of a real tensor")
    return z.im


@rule("conj", "conj_physical")
def conj(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("conj of a real tensor")
    # Eager's conj is a lazy view; pairs carry no conj bit, so it is computed.
    return z.with_data(torch.stack((z.re, -z.im), -1))


@rule("resolve_conj", "resolve_neg")
def resolve(z, *, out):
    # Pairs never carry the lazy conj/neg bits, so there is nothing to resolve.
    if not isinstance(z, Pair):
        raise Unsupported("not a complex tensor")
    return z


