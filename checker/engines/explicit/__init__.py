"""Explicit-state engines: breadth-first search over packed states, liveness on the
explored graph, and random simulation."""
