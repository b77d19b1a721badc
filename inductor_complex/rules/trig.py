"""Filled in by the trig rules (work in progress)."""
