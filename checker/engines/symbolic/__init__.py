"""Symbolic engines over Z3: bounded model checking, k-induction and lemma inference."""
