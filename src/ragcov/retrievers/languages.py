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

from ragcov.analyzer import LANGUAGE_NAMES, corpus_language, describe_scripts, english_share, script_shares

# Model families trained on English only (their model cards say so), matched on the
# name's last part: a local path keeps the name it was saved under.
ENGLISH_ONLY = re.compile(
    r"^(all-minilm-|all-mpnet-|all-distilroberta-|all-roberta-|multi-qa-|msmarco-|"
    r"paraphrase-(minilm|mpnet|distilroberta|albert|tinybert)|"
    r"bge-(small|base|large)-en|gte-(small|base|large)$|e5-(small|base|large)(-v2)?$|"
    r"nomic-embed-text-v1(\.5)?$|mxbai-embed-large|snowflake-arctic-embed-[mls]$|gtr-t5-|sentence-t5-)",
    re.IGNORECASE)
# What a team would pick instead: small, widely used, run by sentence-transformers.
MULTILINGUAL = ("paraphrase-multilingual-MiniLM-L12-v2", "intfloat/multilingual-e5-small",
                "BAAI/bge-m3")
# A corpus is "mostly not English" when this share of it is another script or language.
MOSTLY = 0.5
# Without a language model, only a corpus with English function words in under this share
# of its chunks is called not English (a product catalogue has few, and is English).
NOT_ENGLISH = 0.1


def english_only(model: str) -> bool:
    name = re.split(r"[/\\]", model.rstrip("/\\"))[-1]
    return ENGLISH_ONLY.match(name) is not None


def english_model_warning(model: str | None, texts: Sequence[str],
                          shares: dict[str, float] | None = None) -> str | None:
    """One line when an English-only ``model`` embeds a corpus that is mostly not English.
    ``shares``: the corpus's script shares where the caller has them already."""
    if not model or not english_only(model):
        return None
    shares = script_shares(texts) if shares is None else shares
    not_latin = 1.0 - shares.get("Latin", 0.0) if shares else 0.0
    if not_latin >= MOSTLY:
        what = f"{100 * not_latin:.0f}% of this corpus's letters are not Latin"
    else:
        lang, lang_share = corpus_language(texts)
        if lang is not None and lang != "en" and lang_share >= MOSTLY:
            name = LANGUAGE_NAMES.get(lang, lang)
            what = f"{100 * lang_share:.0f}% of this corpus reads as {name}"
        elif lang is None and english_share(texts) < NOT_ENGLISH:
            # No language model to ask (py3langid): English's function words are nearly absent.
            what = "this corpus has almost none of English's function words"
        else:
            return None
    return (f"the embedding model {model} was trained on English, and {what} (scripts: "
            f"{describe_scripts(shares)}): its rankings there say more about the model than "
            f"about the suite. Multilingual models: {', '.join(MULTILINGUAL)} (--model)")


def stemmer_line(fingerprint: dict) -> str | None:
    """The run's line naming the Snowball stemmer BM25 chose (a choice made for the user
    is said, with the way to undo it)."""
    stemmer = fingerprint.get("stemmer")
    if fingerprint.get("kind") != "bm25" or not stemmer:
        return None
    return (f"bm25: words stemmed with the {stemmer} Snowball stemmer, the corpus's language "
            f"(RAGCOV_STEMMER=none turns stemming off)")


def scripts_line(shares: dict[str, float]) -> str | None:
    """The run's line naming the corpus's scripts (:func:`script_shares`), where any is not Latin."""
    if not shares or set(shares) == {"Latin"} or shares.get("Latin", 0.0) >= 0.99:
        return None
    return f"corpus written in {describe_scripts(shares)} (share of its letters)"
