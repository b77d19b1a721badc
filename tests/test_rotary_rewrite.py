"""The complex rotary idiom and its real-world variants, compiled with the pass.

Each case compares forward outputs and input gradients with eager and checks
that Inductor was left no complex work beyond zero-copy views of complex
inputs (e.g. a complex ``freqs_cis`` buffer).
"""

from __future__ import annotations

import pytest
import torch
from complex_testing import compile_and_compare
from rotary_models import (
    AttributeRotary,
    BufferRotary,
    QKRotary,
    deepseek_apply_rotary_emb,
    llama_apply_rotary_emb,
    precompute_freqs_cis,
)


def _assert_all_real(report, fallbacks):
    assert report is not None and report.count("rewritten") > 0
    assert report.count("bridged") == 0 and report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == [], fallbacks.ops


def test_table_as_module_buffer():
    model = BufferRotary(head_dim=8, max_seq=16)
    xq, xk = torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8)
    report, fallbacks = compile_and_compare(model, xq, xk)
    _assert_all_real(report, fallbacks)
    assert report.count("entry_view") == 1  # the complex buffer, viewed once


def test_table_as_attribute_sliced_by_start_pos():
    model = AttributeRotary(head_dim=8, max_seq=16)
    xq, xk = torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8)
    report, fallbacks = compile_and_compare(lambda q, k: model(q, k, 5), xq, xk)
    _assert_all_real(report, fallbacks)


def test_table_as_per_batch_forward_argument():
    # [B, S, D/2] per-sequence tables, as in packed/varlen training.
    def rotary(xq, xk, freqs):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs = freqs[:, :, None, :]
        return (
            torch.view_as_real(xq_ * freqs).flatten(3).type_as(xq),
            torch.view_as_real(xk_ * freqs).flatten(3).type_as(xk),
        )

    table = precompute_freqs_cis(8, 12)
    freqs = torch.stack([table[:5], table[3:8]])  # [2, 5, 4] complex
    report, fallbacks = compile_and_compare(rotary, torch.randn(2, 5, 3, 8), torch.randn(2, 5, 1, 8), freqs)
    _assert_all_real(report, fallbacks)
    assert report.count("entry_view") == 1


@pytest.mark.parametrize("positions_shape", [(5,), (2, 5)], ids=["shared", "per_batch"])
def test_table_gathered_by_positions(positions_shape):
    table = precompute_freqs_cis(8, 32)

    def rotary(xq, xk, positions):
        freqs = table[positions]  # [S, D/2] or [B, S, D/2]
        if freqs.ndim == 2:
            freqs = freqs.unsqueeze(0)
        freqs = freqs.unsqueeze(2)
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        return torch.view_as_real(xq_ * freqs).flatten(3), torch.view_as_real(xk_ * freqs).flatten(3)

    positions = torch.randint(0, 32, positions_shape)
    report, fallbacks = compile_and_compare(rotary, torch.randn(2, 5, 2, 8), torch.randn(2, 5, 2, 8), positions)
    _assert_all_real(report, fallbacks)


def test_two_index_gather():
    table = precompute_freqs_cis(8, 32).unsqueeze(0).expand(3, -1, -1).contiguous()  # [B, T, D/2]

    def rotary(x, batch_index, positions):
        freqs = table[batch_index[:, None], positions]  # [B, S, D/2]
        x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(x_ * freqs[:, :, None]).flatten(3)

    report, fallbacks = compile_and_compare(
        rotary, torch.randn(2, 4, 2, 8), torch.tensor([2, 0]), torch.randint(0, 32, (2, 4)))
    _assert_all_real(report, fallbacks)


def test_table_built_inside_forward_with_polar():
    def rotary(xq, xk):
        seq, dim = xq.shape[1], xq.shape[-1]
        freqs = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, device=xq.device).float() / dim))
        angles = torch.outer(torch.arange(seq, device=xq.device).float(), freqs)
        freqs_cis = torch.polar(torch.ones_like(angles), angles)
        return llama_apply_rotary_emb(xq, xk, freqs_cis)

    report, fallbacks = compile_and_compare(rotary, torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8))
    _assert_all_real(report, fallbacks)
    assert report.count("entry_view") == 0  # nothing complex enters the graph


def test_head_first_layout():
    # [B, H, S, D] with the table broadcast as [1, 1, S, D/2].
    table = precompute_freqs_cis(8, 6)

    def rotary(q, k):
        q_ = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
        k_ = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
        freqs = table[None, None]
        return torch.view_as_real(q_ * freqs).flatten(-2), torch.view_as_real(k_ * freqs).flatten(-2)

    report, fallbacks = compile_and_compare(rotary, torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8))
    _assert_all_real(report, fallbacks)


def test_packed_tokens_layout():
    # [T, H, D] packed sequences, table gathered per token.
    table = precompute_freqs_cis(8, 16)

    def rotary(x, positions):
        x_ = torch.view_as_complex(x.float().reshape(x.shape[0], x.shape[1], -1, 2))
        return torch.view_as_real(x_ * table[positions].unsqueeze(1)).flatten(2)

    report, fallbacks = compile_and_compare(rotary, torch.randn(7, 3, 8), torch.randint(0, 16, (7,)))
    _assert_all_real(report, fallbacks)


def test_permuted_qk_from_fused_projection():
    # q and k are non-contiguous views of one projection, permuted to [B, S, H, D].
    table = precompute_freqs_cis(8, 5)

    def rotary(qkv):
        b, s, _ = qkv.shape
        q, k, _ = qkv.view(b, s, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)  # [B, H, S, D] each
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q_ = torch.view_as_complex(q.reshape(b, s, 2, 4, 2))
        k_ = torch.view_as_complex(k.unflatten(-1, (4, 2)))  # a valid non-contiguous view
        freqs = table.view(1, s, 1, 4)
        return torch.view_as_real(q_ * freqs).flatten(3), torch.view_as_real(k_ * freqs).flatten(3)

    report, fallbacks = compile_and_compare(rotary, torch.randn(2, 5, 48))
    _assert_all_real(report, fallbacks)


def test_rope_on_a_slice_of_the_head():
    # DeepSeek MLA: rope on the last 4 of 12 dims, the rest passed through.
    table = precompute_freqs_cis(4, 6)

    def mla(q):
        q_nope, q_pe = torch.split(q, [8, 4], dim=-1)
        q_pe = deepseek_apply_rotary_emb(q_pe, table[: q.shape[1]])
        return torch.cat([q_nope, q_pe], dim=-1)

    report, fallbacks = compile_and_compare(mla, torch.randn(2, 6, 3, 12))
    _assert_all_real(report, fallbacks)


def test_bfloat16_activations_float32_table():
    model = BufferRotary(head_dim=8, max_seq=16)
    xq = torch.randn(2, 6, 4, 8, dtype=torch.bfloat16)
    xk = torch.randn(2, 6, 2, 8, dtype=torch.bfloat16)
    report, fallbacks = compile_and_compare(model, xq, xk)
    _assert_all_real(report, fallbacks)


def test_complex128_wan_style_three_axis_table():
    # Wan 2.1: a complex128 table split into frame/height/width parts, each
    # broadcast over the 3-D grid, concatenated, applied in float64.
    head_dim = 12
    c = head_dim // 2
    sizes = [c - 2 * (c // 3), c // 3, c // 3]
    table = torch.cat(
        [precompute_freqs_cis(2 * n, 8, dtype=torch.float64) for n in sizes], dim=1
    )  # [8, c] complex128

    def wan_rope(x, grid):
        f, h, w = grid
        seq, heads = f * h * w, x.shape[2]
        parts = table.split(sizes, dim=1)
        freqs = torch.cat(
            [
                parts[0][:f].view(f, 1, 1, -1).expand(f, h, w, -1),
                parts[1][:h].view(1, h, 1, -1).expand(f, h, w, -1),
                parts[2][:w].view(1, 1, w, -1).expand(f, h, w, -1),
            ],
            dim=-1,
        ).reshape(seq, 1, -1)
        out = []
        for i in range(x.shape[0]):
            x_i = torch.view_as_complex(x[i, :seq].to(torch.float64).reshape(seq, heads, -1, 2))
            x_i = torch.view_as_real(x_i * freqs).flatten(2)
            out.append(torch.cat([x_i, x[i, seq:]]))
        return torch.stack(out).float()

    x = torch.randn(2, 14, 2, head_dim)
    report, fallbacks = compile_and_compare(lambda t: wan_rope(t, (2, 2, 3)), x)
    _assert_all_real(report, fallbacks)


def test_dynamic_true():
    model = BufferRotary(head_dim=8, max_seq=32)
    report, fallbacks = compile_and_compare(model, torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8), dynamic=True)
    _assert_all_real(report, fallbacks)


def test_mark_dynamic_sequence_and_recompile_free_lengths():
    model = BufferRotary(head_dim=8, max_seq=32)
    report, fallbacks = compile_and_compare(
        model, torch.randn(1, 7, 2, 8), torch.randn(1, 7, 2, 8), mark_dynamic=[(0, 1), (1, 1)])
    _assert_all_real(report, fallbacks)
    # The same compiled graph serves other lengths with the same numbers.
    compiled = torch.compile(model, options={"pre_grad_custom_pass": __import__("inductor_complex").ComplexToRealPass()})
    for seq in (3, 11):
        xq, xk = torch.randn(1, seq, 2, 8), torch.randn(1, seq, 2, 8)
        torch._dynamo.mark_dynamic(xq, 1)
        torch._dynamo.mark_dynamic(xk, 1)
        for got, want in zip(compiled(xq, xk), model(xq, xk)):
            torch.testing.assert_close(got, want)


def test_training_loop_with_optimizer_matches_eager():
    torch.manual_seed(0)
    eager_model = QKRotary()
    compiled_model = QKRotary()
    compiled_model.load_state_dict(eager_model.state_dict())
    compiled = torch.compile(
        compiled_model, options={"pre_grad_custom_pass": __import__("inductor_complex").ComplexToRealPass()})
    opt_e = torch.optim.AdamW(eager_model.parameters(), lr=1e-2)
    opt_c = torch.optim.AdamW(compiled_model.parameters(), lr=1e-2)
    for step in range(3):
        x = torch.randn(2, 8, 16)
        for model, opt in ((eager_model, opt_e), (compiled, opt_c)):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    for (name, p_e), p_c in zip(eager_model.named_parameters(), compiled_model.parameters()):
        torch.testing.assert_close(p_c, p_e, atol=1e-5, rtol=1e-5, msg=name)
