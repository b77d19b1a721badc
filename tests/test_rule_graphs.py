"""Graph dumps after the pass, per rule family, in both graph forms.

Each case runs the pass on Dynamo's torch-level graph and on torch.export's
aten graph, pins the rewritten graph with an inline dump, runs the rewritten
graph and compares it with eager, and checks what the pass counted.
Refresh dumps with ``EXPECTTEST_ACCEPT=1 pytest tests/test_rule_graphs.py``.
"""

from __future__ import annotations

import expecttest
import torch
from complex_testing import (
    assert_close,
    aten_graph,
    dynamo_graph,
    normalize_graph,
    run_pass,
)


def _rewrite_both(fn, *args):
    """(dynamo dump, aten dump, dynamo report, aten report), numerics checked."""
    expected = fn(*args)
    dynamo_gm = dynamo_graph(fn, *args)
    dynamo_report = run_pass(dynamo_gm)
    assert_close(dynamo_gm(*args), expected if isinstance(expected, tuple) else (expected,) if not isinstance(expected, list) else expected)
    export_gm = aten_graph(fn, *args)
    aten_report = run_pass(export_gm)
    assert_close(export_gm(*args), expected)
    return normalize_graph(dynamo_gm), normalize_graph(export_gm), dynamo_report, aten_report


def _complex_ops_left(gm_text: str) -> int:
    """Complex-valued nodes left in a dump (the signature's complex inputs excluded)."""
    body = [line for line in gm_text.splitlines() if "def forward" not in line]
    return sum(1 for line in body if ': "c64' in line or ': "c128' in line)


class TestRuleGraphs(expecttest.TestCase):
    def test_mul_by_complex_real_and_scalars(self):
        def fn(x, t, r):
            z = torch.view_as_complex(x)
            return torch.view_as_real(z * t * r * 2.0 * 1j)

        x, t, r = torch.randn(3, 4, 2), torch.randn(4, dtype=torch.complex64), torch.randn(3, 4)
        dyn, ate, dyn_report, aten_report = _rewrite_both(fn, x, t, r)
        self.assertEqual(dyn_report.count("rewritten"), 6)
        self.assertEqual(aten_report.count("bridged") + aten_report.count("kept"), 0)
        self.assertExpectedInline(dyn, """\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3, 4, 2]", L_t_: "c64[4]", L_r_: "f32[3, 4]"):
        l_x_ = L_x_
        l_t_ = L_t_
        l_r_ = L_r_
        view_as_real_1: "f32[4, 2]" = torch.view_as_real(l_t_);  l_t_ = None
        getitem: "f32[4, 1]" = view_as_real_1[(Ellipsis, slice(0, 1, None))]
        getitem_1: "f32[4, 1]" = view_as_real_1[(Ellipsis, slice(1, 2, None))];  view_as_real_1 = None
        mul_4: "f32[3, 4, 2]" = l_x_ * getitem;  getitem = None
        flip: "f32[3, 4, 2]" = l_x_.flip(-1);  l_x_ = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f32[3, 4, 2]" = -flip
        where: "f32[3, 4, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_5: "f32[3, 4, 2]" = where * getitem_1;  where = getitem_1 = None
        add: "f32[3, 4, 2]" = mul_4 + mul_5;  mul_4 = mul_5 = None
        unsqueeze: "f32[3, 4, 1]" = l_r_.unsqueeze(-1);  l_r_ = None
        mul_6: "f32[3, 4, 2]" = add * unsqueeze;  unsqueeze = None
        flip_1: "f32[3, 4, 2]" = add.flip(-1);  add = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f32[3, 4, 2]" = -flip_1
        where_1: "f32[3, 4, 2]" = torch.where(eq_1, neg_1, flip_1);  eq_1 = neg_1 = flip_1 = None
        mul_7: "f32[3, 4, 2]" = where_1 * 0.0;  where_1 = None
        add_1: "f32[3, 4, 2]" = mul_6 + mul_7;  mul_6 = mul_7 = None
        mul_8: "f32[3, 4, 2]" = add_1 * 2.0
        flip_2: "f32[3, 4, 2]" = add_1.flip(-1);  add_1 = None
        arange_2: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_2: "b8[2]" = arange_2 == 0;  arange_2 = None
        neg_2: "f32[3, 4, 2]" = -flip_2
        where_2: "f32[3, 4, 2]" = torch.where(eq_2, neg_2, flip_2);  eq_2 = neg_2 = flip_2 = None
        mul_9: "f32[3, 4, 2]" = where_2 * 0.0;  where_2 = None
        add_2: "f32[3, 4, 2]" = mul_8 + mul_9;  mul_8 = mul_9 = None
        mul_10: "f32[3, 4, 2]" = add_2 * 0.0
        flip_3: "f32[3, 4, 2]" = add_2.flip(-1);  add_2 = None
        arange_3: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_3: "b8[2]" = arange_3 == 0;  arange_3 = None
        neg_3: "f32[3, 4, 2]" = -flip_3
        where_3: "f32[3, 4, 2]" = torch.where(eq_3, neg_3, flip_3);  eq_3 = neg_3 = flip_3 = None
        mul_11: "f32[3, 4, 2]" = where_3 * 1.0;  where_3 = None
        add_3: "f32[3, 4, 2]" = mul_10 + mul_11;  mul_10 = mul_11 = None
        return (add_3,)""")
        self.assertExpectedInline(ate, """\
class GraphModule(torch.nn.Module):
    def forward(self, args_0, args_1, args_2):
        args_0: "f32[3, 4, 2]"; args_1: "c64[4]"; args_2: "f32[3, 4]";
        args_0, args_1, args_2, = fx_pytree.tree_flatten_spec(([args_0, args_1, args_2], {}), self._in_spec)
        view_as_real_1: "f32[4, 2]" = torch.view_as_real(args_1)
        _guards_fn = self._guards_fn(args_0, args_1, args_2);  args_1 = _guards_fn = None
        getitem: "f32[4, 1]" = view_as_real_1[(Ellipsis, slice(0, 1, None))]
        getitem_1: "f32[4, 1]" = view_as_real_1[(Ellipsis, slice(1, 2, None))];  view_as_real_1 = None
        mul_4: "f32[3, 4, 2]" = args_0 * getitem;  getitem = None
        flip: "f32[3, 4, 2]" = args_0.flip(-1);  args_0 = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f32[3, 4, 2]" = -flip
        where: "f32[3, 4, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_5: "f32[3, 4, 2]" = where * getitem_1;  where = getitem_1 = None
        add: "f32[3, 4, 2]" = mul_4 + mul_5;  mul_4 = mul_5 = None
        unsqueeze: "f32[3, 4, 1]" = args_2.unsqueeze(-1);  args_2 = None
        mul_6: "f32[3, 4, 2]" = add * unsqueeze;  unsqueeze = None
        flip_1: "f32[3, 4, 2]" = add.flip(-1);  add = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f32[3, 4, 2]" = -flip_1
        where_1: "f32[3, 4, 2]" = torch.where(eq_1, neg_1, flip_1);  eq_1 = neg_1 = flip_1 = None
        mul_7: "f32[3, 4, 2]" = where_1 * 0.0;  where_1 = None
        add_1: "f32[3, 4, 2]" = mul_6 + mul_7;  mul_6 = mul_7 = None
        mul_8: "f32[3, 4, 2]" = add_1 * 2.0
        flip_2: "f32[3, 4, 2]" = add_1.flip(-1);  add_1 = None
        arange_2: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_2: "b8[2]" = arange_2 == 0;  arange_2 = None
        neg_2: "f32[3, 4, 2]" = -flip_2
        where_2: "f32[3, 4, 2]" = torch.where(eq_2, neg_2, flip_2);  eq_2 = neg_2 = flip_2 = None
        mul_9: "f32[3, 4, 2]" = where_2 * 0.0;  where_2 = None
        add_2: "f32[3, 4, 2]" = mul_8 + mul_9;  mul_8 = mul_9 = None
        mul_10: "f32[3, 4, 2]" = add_2 * 0.0
        flip_3: "f32[3, 4, 2]" = add_2.flip(-1);  add_2 = None
        arange_3: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_3: "b8[2]" = arange_3 == 0;  arange_3 = None
        neg_3: "f32[3, 4, 2]" = -flip_3
        where_3: "f32[3, 4, 2]" = torch.where(eq_3, neg_3, flip_3);  eq_3 = neg_3 = flip_3 = None
        mul_11: "f32[3, 4, 2]" = where_3 * 1.0;  where_3 = None
        add_3: "f32[3, 4, 2]" = mul_10 + mul_11;  mul_10 = mul_11 = None
        return pytree.tree_unflatten((add_3,), self._out_spec)""")

    def test_polar_complex_real_imag_conj(self):
        def fn(mag, phase, re, im):
            a = torch.polar(mag, phase)
            b = torch.complex(re, im).conj()
            c = a * b
            return c.real + torch.imag(c), c.imag

        args = [torch.rand(5) + 0.5, torch.randn(5), torch.randn(5), torch.randn(5)]
        dyn, ate, _, _ = _rewrite_both(fn, *args)
        self.assertEqual(_complex_ops_left(dyn), 0)
        self.assertExpectedInline(dyn, """\
class GraphModule(torch.nn.Module):
    def forward(self, L_mag_: "f32[5]", L_phase_: "f32[5]", L_re_: "f32[5]", L_im_: "f32[5]"):
        l_mag_ = L_mag_
        l_phase_ = L_phase_
        l_re_ = L_re_
        l_im_ = L_im_
        cos: "f32[5]" = torch.cos(l_phase_)
        mul_1: "f32[5]" = l_mag_ * cos;  cos = None
        sin: "f32[5]" = torch.sin(l_phase_);  l_phase_ = None
        mul_2: "f32[5]" = l_mag_ * sin;  l_mag_ = sin = None
        stack: "f32[5, 2]" = torch.stack((mul_1, mul_2), -1);  mul_1 = mul_2 = None
        stack_1: "f32[5, 2]" = torch.stack((l_re_, l_im_), -1);  l_re_ = l_im_ = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 1;  arange = None
        neg: "f32[5, 2]" = -stack_1
        where: "f32[5, 2]" = torch.where(eq, neg, stack_1);  eq = neg = stack_1 = None
        getitem: "f32[5, 1]" = where[(Ellipsis, slice(0, 1, None))]
        getitem_1: "f32[5, 1]" = where[(Ellipsis, slice(1, 2, None))];  where = None
        mul_3: "f32[5, 2]" = stack * getitem;  getitem = None
        flip: "f32[5, 2]" = stack.flip(-1);  stack = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f32[5, 2]" = -flip
        where_1: "f32[5, 2]" = torch.where(eq_1, neg_1, flip);  eq_1 = neg_1 = flip = None
        mul_4: "f32[5, 2]" = where_1 * getitem_1;  where_1 = getitem_1 = None
        add_1: "f32[5, 2]" = mul_3 + mul_4;  mul_3 = mul_4 = None
        getitem_2: "f32[5]" = add_1[(Ellipsis, 0)]
        getitem_3: "f32[5]" = add_1[(Ellipsis, 1)]
        add: "f32[5]" = getitem_2 + getitem_3;  getitem_2 = getitem_3 = None
        getitem_4: "f32[5]" = add_1[(Ellipsis, 1)];  add_1 = None
        return (add, getitem_4)""")
        self.assertExpectedInline(ate, """\
class GraphModule(torch.nn.Module):
    def forward(self, args_0, args_1, args_2, args_3):
        args_0: "f32[5]"; args_1: "f32[5]"; args_2: "f32[5]"; args_3: "f32[5]";
        args_0, args_1, args_2, args_3, = fx_pytree.tree_flatten_spec(([args_0, args_1, args_2, args_3], {}), self._in_spec)
        _guards_fn = self._guards_fn(args_0, args_1, args_2, args_3);  _guards_fn = None
        cos: "f32[5]" = torch.cos(args_1)
        mul_1: "f32[5]" = args_0 * cos;  cos = None
        sin: "f32[5]" = torch.sin(args_1);  args_1 = None
        mul_2: "f32[5]" = args_0 * sin;  args_0 = sin = None
        stack: "f32[5, 2]" = torch.stack((mul_1, mul_2), -1);  mul_1 = mul_2 = None
        stack_1: "f32[5, 2]" = torch.stack((args_2, args_3), -1);  args_2 = args_3 = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 1;  arange = None
        neg: "f32[5, 2]" = -stack_1
        where: "f32[5, 2]" = torch.where(eq, neg, stack_1);  eq = neg = stack_1 = None
        getitem: "f32[5, 1]" = where[(Ellipsis, slice(0, 1, None))]
        getitem_1: "f32[5, 1]" = where[(Ellipsis, slice(1, 2, None))];  where = None
        mul_3: "f32[5, 2]" = stack * getitem;  getitem = None
        flip: "f32[5, 2]" = stack.flip(-1);  stack = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f32[5, 2]" = -flip
        where_1: "f32[5, 2]" = torch.where(eq_1, neg_1, flip);  eq_1 = neg_1 = flip = None
        mul_4: "f32[5, 2]" = where_1 * getitem_1;  where_1 = getitem_1 = None
        add_1: "f32[5, 2]" = mul_3 + mul_4;  mul_3 = mul_4 = None
        getitem_2: "f32[5]" = add_1[(Ellipsis, 0)]
        getitem_3: "f32[5]" = add_1[(Ellipsis, 1)]
        add: "f32[5]" = torch.ops.aten.add.Tensor(getitem_2, getitem_3);  getitem_2 = getitem_3 = None
        getitem_4: "f32[5]" = add_1[(Ellipsis, 1)];  add_1 = None
        return pytree.tree_unflatten((add, getitem_4), self._out_spec)""")

    def test_views_and_shape_ops(self):
        def fn(x):
            z = torch.view_as_complex(x)  # [2, 3, 4]
            z = z.permute(2, 0, 1).transpose(0, -1).contiguous()  # [3, 2, 4]
            z = z.unsqueeze(-1).expand(3, 2, 4, 2).flatten(2).unflatten(-1, (2, 4))
            z = z.reshape(6, 2, 4).view(3, 2, 2, 4)[:, :, :1].squeeze(2).repeat(1, 2, 1)
            return torch.view_as_real(z.clone())

        dyn, ate, dyn_report, _ = _rewrite_both(fn, torch.randn(2, 3, 4, 2))
        self.assertEqual(dyn_report.count("bridged"), 0)
        self.assertEqual(_complex_ops_left(dyn), 0)
        self.assertExpectedInline(dyn, """\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 3, 4, 2]"):
        l_x_ = L_x_
        permute_1: "f32[4, 2, 3, 2]" = l_x_.permute(2, 0, 1, 3);  l_x_ = None
        transpose_1: "f32[3, 2, 4, 2]" = permute_1.transpose(0, -2);  permute_1 = None
        contiguous_1: "f32[3, 2, 4, 2]" = transpose_1.contiguous();  transpose_1 = None
        unsqueeze_1: "f32[3, 2, 4, 1, 2]" = contiguous_1.unsqueeze(-2);  contiguous_1 = None
        expand_1: "f32[3, 2, 4, 2, 2]" = unsqueeze_1.expand(3, 2, 4, 2, 2);  unsqueeze_1 = None
        flatten_1: "f32[3, 2, 8, 2]" = expand_1.flatten(2, -2);  expand_1 = None
        unflatten_1: "f32[3, 2, 2, 4, 2]" = flatten_1.unflatten(-2, (2, 4));  flatten_1 = None
        reshape_1: "f32[6, 2, 4, 2]" = unflatten_1.reshape(6, 2, 4, 2);  unflatten_1 = None
        view_1: "f32[3, 2, 2, 4, 2]" = reshape_1.view(3, 2, 2, 4, 2);  reshape_1 = None
        getitem_1: "f32[3, 2, 1, 4, 2]" = view_1[(slice(None, None, None), slice(None, None, None), slice(None, 1, None))];  view_1 = None
        squeeze_1: "f32[3, 2, 4, 2]" = getitem_1.squeeze(2);  getitem_1 = None
        repeat_1: "f32[3, 4, 4, 2]" = squeeze_1.repeat(1, 2, 1, 1);  squeeze_1 = None
        clone_1: "f32[3, 4, 4, 2]" = repeat_1.clone();  repeat_1 = None
        return (clone_1,)""")
        self.assertExpectedInline(ate, """\
class GraphModule(torch.nn.Module):
    def forward(self, args_0):
        args_0: "f32[2, 3, 4, 2]";
        args_0, = fx_pytree.tree_flatten_spec(([args_0], {}), self._in_spec)
        _guards_fn = self._guards_fn(args_0);  _guards_fn = None
        permute_1: "f32[4, 2, 3, 2]" = args_0.permute(2, 0, 1, 3);  args_0 = None
        transpose_1: "f32[3, 2, 4, 2]" = permute_1.transpose(0, -2);  permute_1 = None
        contiguous_1: "f32[3, 2, 4, 2]" = transpose_1.contiguous();  transpose_1 = None
        unsqueeze_1: "f32[3, 2, 4, 1, 2]" = contiguous_1.unsqueeze(-2);  contiguous_1 = None
        expand_1: "f32[3, 2, 4, 2, 2]" = unsqueeze_1.expand(3, 2, 4, 2, 2);  unsqueeze_1 = None
        flatten_1: "f32[3, 2, 8, 2]" = expand_1.flatten(2, -2);  expand_1 = None
        unflatten_1: "f32[3, 2, 2, 4, 2]" = flatten_1.unflatten(-2, [2, 4]);  flatten_1 = None
        reshape_1: "f32[6, 2, 4, 2]" = unflatten_1.reshape(6, 2, 4, 2);  unflatten_1 = None
        view_1: "f32[3, 2, 2, 4, 2]" = reshape_1.view(3, 2, 2, 4, 2);  reshape_1 = None
        slice_tensor: "f32[3, 2, 1, 4, 2]" = torch.ops.aten.slice.Tensor(view_1, 2, 0, 1, 1);  view_1 = None
        squeeze_1: "f32[3, 2, 4, 2]" = slice_tensor.squeeze(2);  slice_tensor = None
        repeat_1: "f32[3, 4, 4, 2]" = squeeze_1.repeat(1, 2, 1, 1);  squeeze_1 = None
        clone_1: "f32[3, 4, 4, 2]" = repeat_1.clone();  repeat_1 = None
        return pytree.tree_unflatten((clone_1,), self._out_spec)""")

    def test_indexing_and_gathers(self):
        def fn(x, positions, index):
            z = torch.view_as_complex(x)  # [6, 4]
            a = z[positions][..., 1:3][:, None]  # index tensor, Ellipsis, slice, None
            b = z.select(0, 2).narrow(0, 1, 2)
            c = torch.index_select(z, 1, index) + 0
            d = torch.gather(z, 0, positions[:, None].expand(-1, 4))
            return torch.view_as_real(a), torch.view_as_real(b), torch.view_as_real(d), c

        args = [torch.randn(6, 4, 2), torch.tensor([5, 0, 2]), torch.tensor([3, 1])]
        dyn, ate, dyn_report, _ = _rewrite_both(fn, *args)
        self.assertExpectedInline(dyn, """\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[6, 4, 2]", L_positions_: "i64[3]", L_index_: "i64[2]"):
        l_x_ = L_x_
        l_positions_ = L_positions_
        l_index_ = L_index_
        getitem_4: "f32[3, 4, 2]" = l_x_[(l_positions_,)]
        getitem_5: "f32[3, 2, 2]" = getitem_4[(Ellipsis, slice(1, 3, None), slice(None, None, None))];  getitem_4 = None
        getitem_6: "f32[3, 1, 2, 2]" = getitem_5[(slice(None, None, None), None)];  getitem_5 = None
        select_1: "f32[4, 2]" = l_x_.select(0, 2)
        narrow_1: "f32[2, 2]" = select_1.narrow(0, 1, 2);  select_1 = None
        index_select_1: "f32[6, 2, 2]" = torch.index_select(l_x_, 1, l_index_);  l_index_ = None
        getitem_7: "f32[6, 2]" = index_select_1[(Ellipsis, 0)]
        getitem_8: "f32[6, 2]" = index_select_1[(Ellipsis, 1)];  index_select_1 = None
        add_1: "f32[6, 2]" = getitem_7 + 0.0;  getitem_7 = None
        add_2: "f32[6, 2]" = getitem_8 + 0.0;  getitem_8 = None
        stack: "f32[6, 2, 2]" = torch.stack((add_1, add_2), -1);  add_1 = add_2 = None
        getitem_3: "i64[3, 1]" = l_positions_[(slice(None, None, None), None)];  l_positions_ = None
        expand: "i64[3, 4]" = getitem_3.expand(-1, 4);  getitem_3 = None
        unsqueeze: "i64[3, 4, 1]" = expand.unsqueeze(-1);  expand = None
        expand_1: "i64[3, 4, 2]" = unsqueeze.expand(-1, -1, 2);  unsqueeze = None
        gather_1: "f32[3, 4, 2]" = torch.gather(l_x_, 0, expand_1);  l_x_ = expand_1 = None
        select_2: "f32[6, 2]" = torch.select(stack, -1, 0)
        select_3: "f32[6, 2]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[6, 2]" = torch.complex(select_2, select_3);  select_2 = select_3 = None
        return (getitem_6, narrow_1, gather_1, complex_1)""")
        self.assertExpectedInline(ate, """\
class GraphModule(torch.nn.Module):
    def forward(self, args_0, args_1, args_2):
        args_0: "f32[6, 4, 2]"; args_1: "i64[3]"; args_2: "i64[2]";
        args_0, args_1, args_2, = fx_pytree.tree_flatten_spec(([args_0, args_1, args_2], {}), self._in_spec)
        _guards_fn = self._guards_fn(args_0, args_1, args_2);  _guards_fn = None
        index_tensor: "f32[3, 4, 2]" = torch.ops.aten.index.Tensor(args_0, [args_1])
        slice_tensor: "f32[3, 2, 2]" = torch.ops.aten.slice.Tensor(index_tensor, 1, 1, 3, 1);  index_tensor = None
        unsqueeze_2: "f32[3, 1, 2, 2]" = slice_tensor.unsqueeze(1);  slice_tensor = None
        select_1: "f32[4, 2]" = args_0.select(0, 2)
        narrow_1: "f32[2, 2]" = select_1.narrow(0, 1, 2);  select_1 = None
        index_select_1: "f32[6, 2, 2]" = torch.index_select(args_0, 1, args_2);  args_2 = None
        getitem: "f32[6, 2]" = index_select_1[(Ellipsis, 0)]
        getitem_1: "f32[6, 2]" = index_select_1[(Ellipsis, 1)];  index_select_1 = None
        add_1: "f32[6, 2]" = getitem + 0.0;  getitem = None
        add_2: "f32[6, 2]" = getitem_1 + 0.0;  getitem_1 = None
        stack: "f32[6, 2, 2]" = torch.stack((add_1, add_2), -1);  add_1 = add_2 = None
        unsqueeze_1: "i64[3, 1]" = torch.ops.aten.unsqueeze.default(args_1, 1);  args_1 = None
        expand: "i64[3, 4]" = torch.ops.aten.expand.default(unsqueeze_1, [-1, 4]);  unsqueeze_1 = None
        unsqueeze_3: "i64[3, 4, 1]" = expand.unsqueeze(-1);  expand = None
        expand_1: "i64[3, 4, 2]" = unsqueeze_3.expand(-1, -1, 2);  unsqueeze_3 = None
        gather_1: "f32[3, 4, 2]" = torch.gather(args_0, 0, expand_1);  args_0 = expand_1 = None
        view_as_complex_1: "c64[6, 2]" = torch.view_as_complex(stack);  stack = None
        return pytree.tree_unflatten((unsqueeze_2, narrow_1, gather_1, view_as_complex_1), self._out_spec)""")

    def test_split_chunk_unbind_cat_stack_pad(self):
        def fn(x):
            z = torch.view_as_complex(x)  # [4, 6]
            a, b = z.split([2, 4], dim=1)
            c, d = z.chunk(2, dim=0)
            e, *_ = z.unbind(0)
            p = torch.nn.functional.pad(a, (0, 1, 1, 0))
            out = torch.cat([torch.stack([c, d]).flatten(0, 1), b.sum(1, keepdim=True).expand(4, 6)], dim=-1)
            return torch.view_as_real(out), torch.view_as_real(e), torch.view_as_real(p)

        dyn, ate, dyn_report, aten_report = _rewrite_both(fn, torch.randn(4, 6, 2))
        self.assertExpectedInline(dyn, """\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 6, 2]"):
        l_x_ = L_x_
        split_1 = torch.functional.split(l_x_, [2, 4], dim = 1)
        getitem_8: "f32[4, 2, 2]" = split_1[0]
        getitem_9: "f32[4, 4, 2]" = split_1[1];  split_1 = None
        chunk_1 = torch.chunk(l_x_, 2, 0)
        getitem_10: "f32[2, 6, 2]" = chunk_1[0]
        getitem_11: "f32[2, 6, 2]" = chunk_1[1];  chunk_1 = None
        unbind_1 = torch.unbind(l_x_, 0);  l_x_ = None
        getitem_12: "f32[6, 2]" = unbind_1[0];  unbind_1 = None
        pad_1: "f32[5, 3, 2]" = torch.nn.functional.pad(getitem_8, [0, 0, 0, 1, 1, 0], mode = 'constant', value = None);  getitem_8 = None
        stack_1: "f32[2, 2, 6, 2]" = torch.stack([getitem_10, getitem_11], 0);  getitem_10 = getitem_11 = None
        flatten_1: "f32[4, 6, 2]" = stack_1.flatten(0, 1);  stack_1 = None
        sum_2: "f32[4, 1, 2]" = getitem_9.sum([1], keepdim = True);  getitem_9 = None
        expand_1: "f32[4, 6, 2]" = sum_2.expand(4, 6, 2);  sum_2 = None
        cat_1: "f32[4, 12, 2]" = torch.cat([flatten_1, expand_1], -2);  flatten_1 = expand_1 = None
        return (cat_1, getitem_12, pad_1)""")
        self.assertExpectedInline(ate, """\
class GraphModule(torch.nn.Module):
    def forward(self, args_0):
        args_0: "f32[4, 6, 2]";
        args_0, = fx_pytree.tree_flatten_spec(([args_0], {}), self._in_spec)
        _guards_fn = self._guards_fn(args_0);  _guards_fn = None
        split = torch.functional.split(args_0, [2, 4], dim = 1)
        getitem_8: "f32[4, 2, 2]" = split[0]
        getitem_9: "f32[4, 4, 2]" = split[1];  split = None
        chunk_1 = torch.chunk(args_0, 2, 0)
        getitem_10: "f32[2, 6, 2]" = chunk_1[0]
        getitem_11: "f32[2, 6, 2]" = chunk_1[1];  chunk_1 = None
        unbind_1 = torch.unbind(args_0, 0);  args_0 = None
        getitem_12: "f32[6, 2]" = unbind_1[0];  unbind_1 = None
        pad_1: "f32[5, 3, 2]" = torch.nn.functional.pad(getitem_8, [0, 0, 0, 1, 1, 0], mode = 'constant', value = None);  getitem_8 = None
        stack_1: "f32[2, 2, 6, 2]" = torch.stack([getitem_10, getitem_11], 0);  getitem_10 = getitem_11 = None
        flatten_1: "f32[4, 6, 2]" = stack_1.flatten(0, 1);  stack_1 = None
        sum_2: "f32[4, 1, 2]" = getitem_9.sum([1], keepdim = True);  getitem_9 = None
        expand_1: "f32[4, 6, 2]" = sum_2.expand(4, 6, 2);  sum_2 = None
        cat_1: "f32[4, 12, 2]" = torch.cat([flatten_1, expand_1], -2);  flatten_1 = expand_1 = None
        return pytree.tree_unflatten((cat_1, getitem_12, pad_1), self._out_spec)""")

    def test_casts_and_promotion(self):
        def fn(x, t64, r):
            z = torch.view_as_complex(x)  # complex64
            w = z * t64  # promotes to complex128
            v = r.to(torch.complex64).type_as(w) * w  # real → complex, zero imaginary part
            return torch.view_as_real(v.to(torch.complex64)), w.real.float()

        args = [torch.randn(3, 2), torch.randn(3, dtype=torch.complex128), torch.randn(3)]
        dyn, ate, _, _ = _rewrite_both(fn, *args)
        self.assertEqual(_complex_ops_left(dyn), 0)
        self.assertExpectedInline(dyn, """\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3, 2]", L_t64_: "c128[3]", L_r_: "f32[3]"):
        l_x_ = L_x_
        l_t64_ = L_t64_
        l_r_ = L_r_
        view_as_real_1: "f64[3, 2]" = torch.view_as_real(l_t64_);  l_t64_ = None
        to_2: "f64[3, 2]" = l_x_.to(torch.float64);  l_x_ = None
        getitem: "f64[3, 1]" = view_as_real_1[(Ellipsis, slice(0, 1, None))]
        getitem_1: "f64[3, 1]" = view_as_real_1[(Ellipsis, slice(1, 2, None))];  view_as_real_1 = None
        mul_2: "f64[3, 2]" = to_2 * getitem;  getitem = None
        flip: "f64[3, 2]" = to_2.flip(-1);  to_2 = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f64[3, 2]" = -flip
        where: "f64[3, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_3: "f64[3, 2]" = where * getitem_1;  where = getitem_1 = None
        add: "f64[3, 2]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        to_3: "f32[3]" = l_r_.to(device = device(type='cpu'), dtype = torch.float32);  l_r_ = None
        zeros_like: "f32[3]" = torch.zeros_like(to_3)
        stack: "f32[3, 2]" = torch.stack((to_3, zeros_like), -1);  to_3 = zeros_like = None
        to_4: "f64[3, 2]" = stack.to(device = device(type='cpu'), dtype = torch.float64, copy = False);  stack = None
        getitem_2: "f64[3, 1]" = add[(Ellipsis, slice(0, 1, None))]
        getitem_3: "f64[3, 1]" = add[(Ellipsis, slice(1, 2, None))]
        mul_4: "f64[3, 2]" = to_4 * getitem_2;  getitem_2 = None
        flip_1: "f64[3, 2]" = to_4.flip(-1);  to_4 = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f64[3, 2]" = -flip_1
        where_1: "f64[3, 2]" = torch.where(eq_1, neg_1, flip_1);  eq_1 = neg_1 = flip_1 = None
        mul_5: "f64[3, 2]" = where_1 * getitem_3;  where_1 = getitem_3 = None
        add_1: "f64[3, 2]" = mul_4 + mul_5;  mul_4 = mul_5 = None
        to_5: "f32[3, 2]" = add_1.to(device = device(type='cpu'), dtype = torch.float32, copy = False);  add_1 = None
        getitem_4: "f64[3]" = add[(Ellipsis, 0)];  add = None
        float_1: "f32[3]" = getitem_4.float();  getitem_4 = None
        return (to_5, float_1)""")
        self.assertExpectedInline(ate, """\
class GraphModule(torch.nn.Module):
    def forward(self, args_0, args_1, args_2):
        args_0: "f32[3, 2]"; args_1: "c128[3]"; args_2: "f32[3]";
        args_0, args_1, args_2, = fx_pytree.tree_flatten_spec(([args_0, args_1, args_2], {}), self._in_spec)
        view_as_real_1: "f64[3, 2]" = torch.view_as_real(args_1)
        _guards_fn = self._guards_fn(args_0, args_1, args_2);  args_1 = _guards_fn = None
        to_3: "f64[3, 2]" = args_0.to(torch.float64);  args_0 = None
        getitem: "f64[3, 1]" = view_as_real_1[(Ellipsis, slice(0, 1, None))]
        getitem_1: "f64[3, 1]" = view_as_real_1[(Ellipsis, slice(1, 2, None))];  view_as_real_1 = None
        mul_2: "f64[3, 2]" = to_3 * getitem;  getitem = None
        flip: "f64[3, 2]" = to_3.flip(-1);  to_3 = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f64[3, 2]" = -flip
        where: "f64[3, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_3: "f64[3, 2]" = where * getitem_1;  where = getitem_1 = None
        add: "f64[3, 2]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        _assert_tensor_metadata_default = torch.ops.aten._assert_tensor_metadata.default(args_2, dtype = torch.float32, device = device(type='cpu'), layout = torch.strided);  _assert_tensor_metadata_default = None
        to_4: "f32[3]" = args_2.to(device = device(type='cpu'), dtype = torch.float32);  args_2 = None
        zeros_like: "f32[3]" = torch.zeros_like(to_4)
        stack: "f32[3, 2]" = torch.stack((to_4, zeros_like), -1);  to_4 = zeros_like = None
        to_5: "f64[3, 2]" = stack.to(device = device(type='cpu'), dtype = torch.float64, copy = False);  stack = None
        getitem_2: "f64[3, 1]" = add[(Ellipsis, slice(0, 1, None))]
        getitem_3: "f64[3, 1]" = add[(Ellipsis, slice(1, 2, None))]
        mul_4: "f64[3, 2]" = to_5 * getitem_2;  getitem_2 = None
        flip_1: "f64[3, 2]" = to_5.flip(-1);  to_5 = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f64[3, 2]" = -flip_1
        where_1: "f64[3, 2]" = torch.where(eq_1, neg_1, flip_1);  eq_1 = neg_1 = flip_1 = None
        mul_5: "f64[3, 2]" = where_1 * getitem_3;  where_1 = getitem_3 = None
        add_1: "f64[3, 2]" = mul_4 + mul_5;  mul_4 = mul_5 = None
        view_as_complex_1: "c128[3]" = torch.view_as_complex(add_1)
        _assert_tensor_metadata_default_1 = torch.ops.aten._assert_tensor_metadata.default(view_as_complex_1, dtype = torch.complex128, device = device(type='cpu'), layout = torch.strided);  view_as_complex_1 = _assert_tensor_metadata_default_1 = None
        to_6: "f32[3, 2]" = add_1.to(device = device(type='cpu'), dtype = torch.float32, copy = False);  add_1 = None
        getitem_4: "f64[3]" = add[(Ellipsis, 0)];  add = None
        _assert_tensor_metadata_default_2 = torch.ops.aten._assert_tensor_metadata.default(getitem_4, dtype = torch.float64, device = device(type='cpu'), layout = torch.strided);  _assert_tensor_metadata_default_2 = None
        to_2: "f32[3]" = torch.ops.aten.to.dtype(getitem_4, torch.float32);  getitem_4 = None
        return pytree.tree_unflatten((to_6, to_2), self._out_spec)""")

    def test_setitem_into_complex_view_of_input(self):
        def fn(x, t):
            z = torch.view_as_complex(x)
            z[0] = 2 + 3j
            z[1:3] = t[:2] * 1j
            z[..., -1] = t[:, 0]
            return x * 1.0

        x, t = torch.randn(4, 3, 2), torch.randn(4, 3, dtype=torch.complex64)
        expected_x = x.clone()
        expected = fn(expected_x, t)
        gm = dynamo_graph(fn, x.clone(), t)
        report = run_pass(gm)
        actual_x = x.clone()
        assert_close(gm(actual_x, t), (expected,))
        assert_close(actual_x, expected_x)  # the write reached the caller's tensor
        self.assertEqual(report.count("bridged") + report.count("kept"), 0, report.format())
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 3, 2]", L_t_: "c64[4, 3]"):
        l_x_ = L_x_
        l_t_ = L_t_
        view_as_real: "f32[4, 3, 2]" = torch.view_as_real(l_t_);  l_t_ = None
        scalar_tensor: "f32[]" = torch.scalar_tensor(2.0, dtype = torch.float32, device = device(type='cpu'))
        scalar_tensor_1: "f32[]" = torch.scalar_tensor(3.0, dtype = torch.float32, device = device(type='cpu'))
        stack: "f32[2]" = torch.stack([scalar_tensor, scalar_tensor_1]);  scalar_tensor = scalar_tensor_1 = None
        l_x_[(0,)] = stack;  setitem_3 = l_x_;  stack = setitem_3 = None
        getitem_2: "f32[2, 3, 2]" = view_as_real[(slice(None, 2, None),)]
        mul_2: "f32[2, 3, 2]" = getitem_2 * 0.0
        flip: "f32[2, 3, 2]" = getitem_2.flip(-1);  getitem_2 = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f32[2, 3, 2]" = -flip
        where: "f32[2, 3, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_3: "f32[2, 3, 2]" = where * 1.0;  where = None
        add: "f32[2, 3, 2]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        l_x_[(slice(1, 3, None),)] = add;  setitem_4 = l_x_;  add = setitem_4 = None
        getitem_3: "f32[4, 2]" = view_as_real[(slice(None, None, None), 0)];  view_as_real = None
        l_x_[(Ellipsis, -1, slice(None, None, None))] = getitem_3;  setitem_5 = l_x_;  getitem_3 = setitem_5 = None
        mul_1: "f32[4, 3, 2]" = l_x_ * 1.0;  l_x_ = None
        return (mul_1,)""")


def test_transposes_adjoints_zero_dim_flatten_valued_pad_and_contiguous_casts():
    def fn(x, s):
        z = torch.view_as_complex(x)  # [3, 4]
        w = torch.view_as_complex(s)  # 0-d
        padded = torch.nn.functional.pad(z, (1, 2), value=2.5)
        return (
            torch.view_as_real(z.T), torch.view_as_real(z.mT), torch.view_as_real(z.H.resolve_conj()),
            torch.view_as_real(z.mH.resolve_conj()), torch.view_as_real(w.flatten()), torch.view_as_real(padded),
            z.cdouble(memory_format=torch.contiguous_format).real,
        )

    x, s = torch.randn(3, 4, 2), torch.randn(2)
    gm = dynamo_graph(fn, x, s)
    report = run_pass(gm)
    assert_close(gm(x, s), fn(x, s))
    assert report.count("kept") + report.count("bridged") == 0, report.format()
