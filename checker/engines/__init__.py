"""Engines explore a Machine: explicit BFS, simulation (Z3 and Spark elsewhere)."""
