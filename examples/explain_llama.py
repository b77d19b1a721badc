"""An example for ``python -m inductor_complex explain examples/explain_llama.py:model``:
the demo's small Llama (Meta's complex rotary embedding) with example tokens."""

import torch

from inductor_complex.demo import ModelArgs, Transformer


def model():
    torch.manual_seed(0)
    args = ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=128, ffn_hidden=128, max_seq_len=32)
    return Transformer(args), (torch.randint(0, 128, (2, 16)),)
