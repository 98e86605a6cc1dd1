"""`ctmc infer`: lemmas found for a model that has none (see `pipeline`)."""

from checker.engines.symbolic.houdini import houdini
from checker.engines.symbolic.infer.pipeline import (
    SEARCHES,
    InferOptions,
    InferResult,
    as_properties,
    as_source,
    infer,
    reachable_candidates,
)
from checker.engines.symbolic.infer.templates import Candidate

__all__ = ["SEARCHES", "Candidate", "InferOptions", "InferResult", "as_properties",
           "as_source", "houdini", "infer", "reachable_candidates"]
