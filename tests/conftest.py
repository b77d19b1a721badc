import os

import pytest
import torch
from hypothesis import settings

from inductor_complex.complex_to_real_pass import ComplexToRealPass

# Property tests are reproducible in CI (the same examples every run); set
# INDUCTOR_COMPLEX_HYPOTHESIS=explore to draw fresh random examples.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("INDUCTOR_COMPLEX_HYPOTHESIS", "ci"))

# Every test must see the pass run: a cache hit would skip pre-grad passes.
torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False
torch._dynamo.config.cache_size_limit = 64


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


@pytest.fixture(autouse=True)
def pair_loop_forms_independent_of_the_host(monkeypatch):
    """Graph dumps pin one form on every host: the forms chosen for scalar pair loops
    (a returned product written by parts) follow the CPU's vector ISA by default, so
    tests get them only where they ask for scalar pair loops (``planes_on_cpu=False``);
    a test of the default undoes this."""
    monkeypatch.setattr(ComplexToRealPass, "scalar_pair_loops_on_cpu", lambda self: self.planes_on_cpu is False)
