"""A general bounded model checker: one spec language, several engines.

Nothing in this package knows about CockroachDB; protocol specs live in `spec/`.
"""
