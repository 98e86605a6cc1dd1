"""The spec language: what a spec file imports."""

from checker.lang.expr import (
    And,
    Enum,
    Exists,
    Expr,
    ForAll,
    If,
    Implies,
    Max,
    Min,
    Not,
    Or,
)
from checker.lang.machine import Machine
from checker.lang.spec import Spec, require
from checker.lang.types import Array, Bool, Int, Record

__all__ = [
    "And", "Array", "Bool", "Enum", "Exists", "Expr", "ForAll", "If", "Implies", "Int",
    "Machine", "Max", "Min", "Not", "Or", "Record", "Spec", "require",
]
