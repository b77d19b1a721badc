"""The rotary-embedding idiom: finding it in a graph and the fused kernel path."""
