"""Complex convolutions as three real ones, the way eager computes them.

Eager's complex convolution (ATen's ``complex_convolution``) uses Gauss's
trick on the parts: ``a = conv(x_re, w_re, b_re)``, ``b = conv(x_im, w_im)``,
``c = conv(x_re + x_im, w_re + w_im, b_re + b_im)``, then ``a - b`` and
``(c - a) - b``. The rule emits the same three real convolutions with the same
bias placement, so the result is eager's bit for bit on the same kernels
(checked against eager on CPU), and autograd derives the real backward. The
Gauss form loses accuracy where the parts cancel; so does eager's.
"""

from __future__ import annotations

import torch

from ..values import Pair
from .registry import Unsupported, rule


def _parts_conv(conv, name: str):
    def complex_conv(x, weight, bias=None, *args, out, **kwargs):
        if not (isinstance(x, Pair) and isinstance(weight, Pair) and x.dtype == weight.dtype):
            raise Unsupported(f"{name} of operands that are not both complex of one dtype")  # (eager refuses them)
        if bias is not None and not (isinstance(bias, Pair) and bias.dtype == x.dtype):
            raise Unsupported(f"{name} with a bias that is not complex of the input's dtype")
        x_re, x_im, w_re, w_im = x.re, x.im, weight.re, weight.im
        b_re, b_sum = (bias.re, bias.re + bias.im) if bias is not None else (None, None)
        a = conv(x_re, w_re, b_re, *args, **kwargs)
        b = conv(x_im, w_im, None, *args, **kwargs)
        c = conv(x_re + x_im, w_re + w_im, b_sum, *args, **kwargs)
        return Pair(torch.stack((a - b, c - a - b), -1), out.dtype, out.ndim)

    complex_conv.__name__ = f"complex_{name}"
    return complex_conv


for _name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    rule(_name)(_parts_conv(getattr(torch, _name), _name))
# aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
# what the others decompose to in AOTAutograd's graphs.
rule("convolution")(_parts_conv(torch.ops.aten.convolution.default, "convolution"))
