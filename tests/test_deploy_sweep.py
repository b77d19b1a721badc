"""Every op of the deployment sweep (deploy_sweep.py), rewritten, runs in
ExecuTorch and onnxruntime with eager's numbers."""

from __future__ import annotations

import pytest
from complex_testing import require_executorch_runtime
from deploy_sweep import OPS, RUNTIMES, check

@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", list(OPS))
def test_op_deploys_with_eagers_numbers(name, runtime, tmp_path):
    if runtime == "executorch":
        require_executorch_runtime()
    else:
        pytest.importorskip("onnxruntime")
        pytest.importorskip("onnxscript")
    check(name, runtime, tmp_path)
