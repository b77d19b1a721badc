"""Filled in by the scatter rules (work in progress)."""
