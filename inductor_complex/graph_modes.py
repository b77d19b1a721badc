"""Grad mode and autocast in effect at each node of Dynamo's graph.

Dynamo records ``with torch.no_grad():`` as ``torch._C._set_grad_enabled``
calls and ``with torch.autocast(...)`` as ``_enter_autocast``/``_exit_autocast``
pairs, in line with the ops they govern. Nodes the pass inserts run in the
mode of the place they are inserted at, so:

* a view the pass shares between uses must be made where the value is
  defined, not at its first use (a first use under ``no_grad`` would cut the
  gradient of every later use), and its fake value is computed in that mode;
* eager's autocast never touches complex ops, but it would cast the real
  GEMMs that replace them: the rewriter turns autocast off around its nodes.

The aten graphs torch.export hands the hook have no such nodes (they are
inference graphs with casts already explicit), so only the ambient modes count.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.fx

_DEVICE_TYPES = ("cpu", "cuda", "xpu", "mps", "hpu")


@dataclasses.dataclass(frozen=True)
class Modes:
    grad_enabled: bool
    autocast_devices: frozenset = frozenset()  # device types whose autocast is on


def ambient_modes(tracks_grad: bool) -> Modes:
    """The modes the graph starts in: those of the compile call (Dynamo guards on them)."""
    devices = set()
    for device in _DEVICE_TYPES:
        try:
            if torch.is_autocast_enabled(device):
                devices.add(device)
        except (RuntimeError, TypeError):  # a device type this build does not know
            pass
    return Modes(torch.is_grad_enabled() if tracks_grad else False, frozenset(devices))


def _target_name(node: torch.fx.Node) -> str:
    return getattr(node.target, "__name__", "") if node.op == "call_function" else ""


def modes_by_node(graph: torch.fx.Graph, start: Modes) -> dict[torch.fx.Node, Modes]:
    """The modes each node of ``graph`` runs in (a mode-setting node: those before it)."""
    modes: dict[torch.fx.Node, Modes] = {}
    grad = start.grad_enabled
    grad_before_inference: list[bool] = []
    # Each entered autocast region: (enter node, device type, enabled); exits pop theirs.
    regions: list[tuple[torch.fx.Node, str, bool]] = []

    def autocast_devices() -> frozenset:
        devices = set(start.autocast_devices)
        for _, device, enabled in regions:  # innermost region of a device wins
            (devices.add if enabled else devices.discard)(device)
        return frozenset(devices)

    current = Modes(grad, autocast_devices())
    for node in graph.nodes:
        modes[node] = current
        name = _target_name(node)
        if name == "_set_grad_enabled" and node.args and isinstance(node.args[0], bool):
            grad = node.args[0]
        elif name == "_enter_inference_mode":
            grad_before_inference.append(grad)
            grad = grad and not (node.args and node.args[0] is True)
        elif name == "_exit_inference_mode" and grad_before_inference:
            grad = grad_before_inference.pop()
        elif name == "_enter_autocast" and len(node.args) >= 3 and isinstance(node.args[0], str):
            regions.append((node, node.args[0], bool(node.args[2])))
        elif name == "_exit_autocast" and node.args:
            regions[:] = [region for region in regions if region[0] is not node.args[0]]
        else:
            continue
        current = Modes(grad, autocast_devices())
    return modes
