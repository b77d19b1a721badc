"""Filled in by the losses rules (work in progress)."""
