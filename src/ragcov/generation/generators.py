"""Question writers by name: an OpenAI-compatible endpoint, llama.cpp in a child process, or no LLM.

:func:`make_generator` builds one from its command-line name. Each lives in a
module of its own (:mod:`~ragcov.generation.openai_compat`,
:mod:`~ragcov.generation.llamacpp`, :mod:`~ragcov.generation.extractive`); what
they share is in :mod:`~ragcov.generation.base`. The names are imported here
too, where :mod:`ragcov.generation` and earlier code take them from.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ragcov.errors import RagcovError
from ragcov.generation.base import (
    COMPLETION_STOP,
    MODES,
    Generation,
    GenerationError,
    Generator,
)
from ragcov.generation.extractive import ExtractiveGenerator
from ragcov.generation.llamacpp import LlamaCppGenerator, default_gguf
from ragcov.generation.openai_compat import OpenAIGenerator
from ragcov.generation.templates import load_template

__all__ = [
    "COMPLETION_STOP", "GENERATORS", "MODES", "ExtractiveGenerator", "Generation",
    "GenerationError", "Generator", "LlamaCppGenerator", "OpenAIGenerator", "default_gguf",
    "make_generator",
]

GENERATORS = ("openai", "llama-cpp", "extractive")


def make_generator(kind: str, corpus_texts: Sequence[str], model: str | None = None,
                   base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                   mode: str | None = None, prompt: str | os.PathLike[str] | None = None,
                   **options: Any) -> Any:
    """Build a generator from its CLI name."""
    if kind == "extractive":
        return ExtractiveGenerator(corpus_texts)
    if kind == "openai":
        mode = mode or "chat"
        return OpenAIGenerator(model or "", base_url=base_url, api_key_env=api_key_env,
                               mode=mode, template=load_template(prompt, mode), **options)
    if kind == "llama-cpp":
        mode = mode or "completion"
        keep = {k: v for k, v in options.items() if k in ("max_tokens", "temperature", "threads")}
        return LlamaCppGenerator(model, mode=mode, template=load_template(prompt, mode), **keep)
    raise RagcovError(f"unknown generator {kind!r}: expected {', '.join(GENERATORS)}")
