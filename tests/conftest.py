
import pytest
import torch

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
