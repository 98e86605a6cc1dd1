"""Backends compile a Machine's expressions: scalar Python, NumPy batches, Z3 terms."""
