"""Counterexample traces: the ITF file format, replay, and the terminal viewer."""
