"""Question writers by name: an OpenAI-compatible endpoint, llama.cpp in a child process, or no LLM.

:data:`GENERATORS` maps each command-line name to its factory, the same style as the
retriever and store registries; each writer lives in a module of its own
(:mod:`~ragcov.generation.openai_compat`, :mod:`~ragcov.generation.llamacpp`,
:mod:`~ragcov.generation.extractive`) and what they share is in
:mod:`~ragcov.generation.base`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ragcov.errors import RagcovError
from ragcov.generation.extractive import ExtractiveGenerator
from ragcov.generation.llamacpp import LlamaCppGenerator
from ragcov.generation.openai_compat import OpenAIGenerator
from ragcov.generation.templates import load_template


def _openai(corpus_texts: Sequence[str], model: str | None, base_url: str | None,
            api_key_env: str, mode: str | None, prompt: str | os.PathLike[str] | None,
            options: dict[str, Any]) -> Any:
    mode = mode or "chat"
    return OpenAIGenerator(model or "", base_url=base_url, api_key_env=api_key_env,
                           mode=mode, template=load_template(prompt, mode), **options)


def _llama_cpp(corpus_texts: Sequence[str], model: str | None, base_url: str | None,
               api_key_env: str, mode: str | None, prompt: str | os.PathLike[str] | None,
               options: dict[str, Any]) -> Any:
    mode = mode or "completion"
    keep = {k: v for k, v in options.items() if k in ("max_tokens", "temperature", "threads")}
    return LlamaCppGenerator(model, mode=mode, template=load_template(prompt, mode), **keep)


def _extractive(corpus_texts: Sequence[str], model: str | None, base_url: str | None,
                api_key_env: str, mode: str | None, prompt: str | os.PathLike[str] | None,
                options: dict[str, Any]) -> Any:
    return ExtractiveGenerator(corpus_texts)


GENERATORS: dict[str, Callable[..., Any]] = {
    "openai": _openai, "llama-cpp": _llama_cpp, "extractive": _extractive,
}


def make_generator(kind: str, corpus_texts: Sequence[str], model: str | None = None,
                   base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                   mode: str | None = None, prompt: str | os.PathLike[str] | None = None,
                   **options: Any) -> Any:
    """Build a generator from its CLI name (a key of :data:`GENERATORS`)."""
    if kind not in GENERATORS:
        raise RagcovError(f"unknown generator {kind!r}: expected {', '.join(GENERATORS)}")
    return GENERATORS[kind](corpus_texts, model, base_url, api_key_env, mode, prompt, options)
