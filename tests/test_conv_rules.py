"""Complex convolutions: three real convolutions, eager's Gauss form, bit for bit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from complex_testing import aten_graph, compare_training, compile_and_compare, dynamo_graph, run_pass
from torch import nn

CASES = {
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, padding=2), (2, 3, 16), (4, 3, 5), (4,)),
    "conv1d_stride_dilation": (lambda x, w, b: F.conv1d(x, w, None, stride=2, dilation=2) + b[:, None], (2, 3, 16), (4, 3, 3), (4,)),
    "conv2d_same_groups": (lambda x, w, b: F.conv2d(x, w, b, padding="same", groups=2), (2, 4, 8, 8), (6, 2, 3, 3), (6,)),
    "conv_transpose1d": (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2), (2, 3, 8), (3, 4, 3), (4,)),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b), (1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (3,)),
}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("case", list(CASES))
def test_complex_convolution_is_eagers_bit_for_bit(case, dtype):
    fn, x_shape, w_shape, b_shape = CASES[case]
    gen = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(s, dtype=dtype, generator=gen) for s in (x_shape, w_shape, b_shape))
    expected = fn(x, w, b)
    dynamo_gm = dynamo_graph(fn, x, w, b)
    report = run_pass(dynamo_gm)
    assert not report.count("kept") and not report.count("bridged"), report.format()
    (actual,) = dynamo_gm(*dynamo_gm.example_inputs)
    assert torch.equal(actual, expected)
    exported = aten_graph(fn, x, w, b)
    aten_report = run_pass(exported)
    assert not aten_report.count("kept") and not aten_report.count("bridged"), aten_report.format()
    assert torch.equal(exported(x, w, b), expected)
    # Compiled by Inductor, forward and gradients (its convolutions are the same kernels; sums may reassociate).
    _, fallbacks = compile_and_compare(fn, x, w, b)
    assert fallbacks.beyond_edges == [], fallbacks.ops


class ComplexCNN(nn.Module):
    """A complex CNN (complex weights as nn.Parameter of complex dtype), trained with a real loss."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 4, 3, padding=1, dtype=torch.complex64)
        self.conv2 = nn.Conv1d(4, 2, 3, padding=1, dtype=torch.complex64)

    def forward(self, x):
        h = self.conv1(x.to(torch.complex64))
        h = h * torch.sigmoid(h.abs())  # a magnitude gate
        return self.conv2(h).abs().square().mean()


def test_complex_cnn_trains_like_eager():
    _, fallbacks = compare_training(ComplexCNN, torch.randn(2, 2, 16), torch.optim.Adam, atol=1e-5, rtol=1e-4)
    assert fallbacks.beyond_edges == [], fallbacks.ops
