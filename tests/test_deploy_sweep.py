"""Every op of the deployment sweep (deploy_sweep.py), rewritten, runs in
ExecuTorch and onnxruntime with eager's numbers: in groups of ops, one program
each (``python tests/deploy_sweep.py`` checks them one by one)."""

from __future__ import annotations

import pytest
from complex_testing import require_executorch_runtime
from deploy_sweep import RUNTIMES, check, groups

@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("names", groups(), ids=lambda names: "+".join(names))
def test_ops_deploy_with_eagers_numbers(names, runtime, tmp_path):
    if runtime == "executorch":
        require_executorch_runtime()
    else:
        pytest.importorskip("onnxruntime")
        pytest.importorskip("onnxscript")
    check(names, runtime, tmp_path)
