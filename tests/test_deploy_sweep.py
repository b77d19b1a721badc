"""Every op of the deployment sweep (deploy_sweep.py), rewritten, runs in
ExecuTorch and onnxruntime with eager's numbers."""

from __future__ import annotations

import pytest
from deploy_sweep import OPS, RUNTIMES, check

_MODULES = {"executorch": "executorch.runtime", "onnxruntime": "onnxruntime"}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", list(OPS))
def test_op_deploys_with_eagers_numbers(name, runtime, tmp_path):
    pytest.importorskip(_MODULES[runtime])
    if runtime == "onnxruntime":
        pytest.importorskip("onnxscript")
    check(name, runtime, tmp_path)
