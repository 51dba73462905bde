"""Which embedding models read which languages: a warning before an English model ranks
a corpus it cannot read.

all-MiniLM-L6-v2, the default, was trained on English pairs: on Chinese or Korean text
its vectors are mostly noise, and coverage measured through it says more about the model
than about the suite. Nothing is downloaded to decide: the model's name is matched
against families whose model cards say English, and the corpus's language is read from
its own text (:mod:`ragcov.analyzer`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragcov.analyzer import describe_scripts, english_share, script_shares

# Model families trained on English only (their model cards say so), matched on the
# name's last part: a local path keeps the name it was saved under.
ENGLISH_ONLY = re.compile(
    r"^(all-minilm-|all-mpnet-|all-distilroberta-|all-roberta-|multi-qa-|msmarco-|"
    r"paraphrase-(minilm|mpnet|distilroberta|albert|tinybert)|"
    r"bge-(small|base|large)-en|gte-(small|base|large)$|e5-(small|base|large)(-v2)?$|"
    r"nomic-embed-text|mxbai-embed-large|snowflake-arctic-embed-[mls]$|gtr-t5-|sentence-t5-)",
    re.IGNORECASE)
# What a team would pick instead: small, widely used, run by sentence-transformers.
MULTILINGUAL = ("paraphrase-multilingual-MiniLM-L12-v2", "intfloat/multilingual-e5-small",
                "BAAI/bge-m3")
# Below this share of English text a corpus is "mostly not English".
MOSTLY = 0.5


def english_only(model: str) -> bool:
    name = re.split(r"[/\\]", model.rstrip("/\\"))[-1]
    return ENGLISH_ONLY.match(name) is not None


def english_model_warning(model: str | None, texts: Sequence[str]) -> str | None:
    """One line when an English-only ``model`` embeds a corpus that is mostly not English."""
    if not model or not english_only(model):
        return None
    share = english_share(texts)
    if share >= MOSTLY:
        return None
    scripts = describe_scripts(script_shares(texts))
    return (f"the embedding model {model} was trained on English, and {100 * (1 - share):.0f}% "
            f"of this corpus is not English (scripts: {scripts}): its rankings there say more "
            f"about the model than about the suite. Multilingual models: "
            f"{', '.join(MULTILINGUAL)} (--model)")


def scripts_line(texts: Sequence[str]) -> str | None:
    """The run's line naming the corpus's scripts, where any is not Latin."""
    shares = script_shares(texts)
    if not shares or set(shares) == {"Latin"} or shares.get("Latin", 0.0) >= 0.99:
        return None
    return f"corpus written in {describe_scripts(shares)} (share of its letters)"
