"""One rank of the distributed tests: a small Llama with complex rope, every
block compiled with the pass, trained a few steps under FSDP2 or tensor parallel.

The test (``test_distributed.py``) starts two of these on the CPU with gloo and
compares what rank 0 saves with single-process eager. The same script runs on
GPUs under torchrun, which sets RANK, WORLD_SIZE and the rendezvous address:

    torchrun --nproc-per-node 2 tests/distributed_worker.py --case tp --backend nccl --out /tmp/tp
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor, Replicate
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    parallelize_module,
)

import inductor_complex
from inductor_complex.demo import ModelArgs, Transformer
from inductor_complex.fallbacks import count_complex_fallbacks

# Heads and hidden sizes divide by 2 ranks.
SMALL = ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=64, ffn_hidden=48, max_seq_len=16)
STEPS, LR, BATCH, SEQ = 3, 0.1, 4, 8
CASES = ("fsdp", "fsdp_bf16", "tp")


def build_model(dtype=torch.float32) -> Transformer:
    torch.manual_seed(0)
    return Transformer(SMALL, dtype=dtype)


def tokens() -> torch.Tensor:
    return torch.randint(0, SMALL.vocab_size, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))


def loss_of(output: torch.Tensor) -> torch.Tensor:
    return output.float().square().mean()


def full(t: torch.Tensor) -> torch.Tensor:
    return (t.full_tensor() if isinstance(t, DTensor) else t).detach().clone()


def shard_fsdp(model, mesh, mixed_precision: bool):
    """torchtitan's order: compile each block, then shard it, then the root."""
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mixed_precision \
        else MixedPrecisionPolicy()
    for block in model.layers:
        block.compile(fullgraph=True)
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)


# Column-parallel q/k/v and the MLP's inputs, row-parallel outputs; the rotary
# table reaches each attention as a replicated DTensor and is read locally.
TP_PLAN = {
    "attention": PrepareModuleInput(
        input_layouts=(Replicate(), Replicate()),
        desired_input_layouts=(Replicate(), Replicate()),
        use_local_output=True,
    ),
    "attention.wq": ColwiseParallel(),
    "attention.wk": ColwiseParallel(),
    "attention.wv": ColwiseParallel(),
    "attention.wo": RowwiseParallel(),
    "feed_forward.w1": ColwiseParallel(),
    "feed_forward.w3": ColwiseParallel(),
    "feed_forward.w2": RowwiseParallel(),
}


def parallelize_tp(model, mesh):
    for block in model.layers:
        parallelize_module(block, mesh, TP_PLAN)
        block.compile(fullgraph=True)
    model.freqs_cis = DTensor.from_local(model.freqs_cis, mesh, [Replicate()], run_check=False)


def train(case: str, rank: int, world: int, device: torch.device, complex_pass) -> dict:
    mesh = init_device_mesh(device.type, (world,))
    model = build_model().to(device)
    batch = tokens().to(device)
    if case == "tp":
        parallelize_tp(model, mesh)
    else:
        shard_fsdp(model, mesh, mixed_precision=case == "fsdp_bf16")
        batch = batch.chunk(world)[rank]  # data parallel: each rank its half of the batch
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses, grads = [], []
    with count_complex_fallbacks() as fallbacks:
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = loss_of(model(batch))
            loss.backward()
            global_loss = loss.detach().clone()
            dist.all_reduce(global_loss)
            losses.append(global_loss.cpu() / world)
            grads.append({name: full(p.grad).cpu() for name, p in model.named_parameters()})
            optimizer.step()
    return {
        "losses": losses,
        "grads": grads,
        "params": {name: full(p).cpu() for name, p in model.named_parameters()},
        "fallbacks_beyond_edges": fallbacks.beyond_edges,
        "graph_breaks": sum(counters["graph_break"].values()),
        "graphs_before_autograd": len(complex_pass.reports),
        "graphs_after_autograd": len(complex_pass.post_grad.reports),
        "rewritten": sum(r.count("rewritten") for r in complex_pass.reports),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=CASES, required=True)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--rank", type=int, default=int(os.environ.get("RANK", 0)))
    parser.add_argument("--world", type=int, default=int(os.environ.get("WORLD_SIZE", 2)))
    parser.add_argument("--init", default="env://", help="tcp://host:port, or env:// as torchrun sets it")
    args = parser.parse_args()
    # Every graph must go through the pass: a cache hit would skip it.
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend, init_method=args.init, rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        complex_pass = inductor_complex.enable(fused_rotary=False)
        result = train(args.case, args.rank, args.world, device, complex_pass)
    finally:
        dist.destroy_process_group()
    if args.rank == 0:
        args.out.mkdir(parents=True, exist_ok=True)
        torch.save(result, args.out / "rank0.pt")


if __name__ == "__main__":
    main()
