"""RQ3's failure definitions and option parsing."""

from __future__ import annotations

import pytest

from ragcov.errors import RagcovError
from research.rq3.design import FailureDef, parse_failure_defs, parse_floats


def test_parsers() -> None:
    assert parse_failure_defs("hit, context_relevance<0.5") == [
        FailureDef("hit", None), FailureDef("context_relevance", 0.5)]
    assert FailureDef("context_relevance", 0.5).name == "context_relevance<0.5"
    for bad in ("ndcg", "", "hit<x"):
        with pytest.raises(RagcovError):
            parse_failure_defs(bad)
    assert parse_floats("0.6,0.8", "--taus", 0, 1) == [0.6, 0.8]
    with pytest.raises(RagcovError):
        parse_floats("0.6,1.5", "--taus", 0, 1)
