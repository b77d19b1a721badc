"""One process of the compile-cache test: compile a complex rope forward and
backward with the pass installed, print what the caches and the pass did.

Run as ``python compile_cache_child.py '<options as JSON>'`` with
TORCHINDUCTOR_CACHE_DIR set; the caches are on (torch's defaults).
"""

import json
import sys

import torch
from torch._dynamo.utils import counters

import inductor_complex


def rope(x, freqs):
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs).flatten(-2).type_as(x)


def main(options: dict) -> None:
    complex_pass = inductor_complex.enable(**options)
    torch.manual_seed(0)
    x = torch.randn(2, 8, 4, 16, requires_grad=True)
    freqs = torch.polar(torch.ones(8, 1, 8), torch.randn(8, 1, 8))
    compiled = torch.compile(rope)(x, freqs)
    compiled.backward(torch.ones_like(compiled))
    x_eager = x.detach().clone().requires_grad_()
    eager = rope(x_eager, freqs)
    eager.backward(torch.ones_like(eager))
    print(json.dumps({
        "package": inductor_complex.__file__,
        "graphs_rewritten": len(complex_pass.reports) + len(complex_pass.post_grad.reports),
        "fx_graph_cache_hits": counters["inductor"]["fxgraph_cache_hit"],
        "fx_graph_cache_misses": counters["inductor"]["fxgraph_cache_miss"],
        "autograd_cache_hits": counters["aot_autograd"]["autograd_cache_hit"],
        "autograd_cache_misses": counters["aot_autograd"]["autograd_cache_miss"],
        "max_output_error": (compiled - eager).abs().max().item(),
        "max_grad_error": (x.grad - x_eager.grad).abs().max().item(),
    }))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
