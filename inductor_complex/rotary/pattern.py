"""Placeholder: the rotary pattern lands with the fused kernel."""

from __future__ import annotations


def fuse_rotary_sites(graph, report, fused_rotary) -> None:
    return None
