"""Prompt templates: plain Jinja2 files a user can replace with ``--prompt``.

The template sees ``passage`` (the target chunks' texts joined by blank lines),
``passages`` (the list) and ``language`` (the passages' language in words, "Chinese",
or empty for English: :func:`ragcov.analyzer.language_name`), so a question is asked
in the chunk's own language. Its hash goes into every provenance record, so a
question can always be traced to the exact prompt wording that produced it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from ragcov.analyzer import language_name
from ragcov.errors import RagcovError
from ragcov.files import read_text, text_hash

BUILTIN = {"completion": "completion.txt", "chat": "chat.txt"}


@dataclass
class PromptTemplate:
    text: str
    source: str
    _compiled: object = field(default=None, repr=False, compare=False)

    @property
    def hash(self) -> str:
        return text_hash(self.text)

    def render(self, passages: list[str]) -> str:
        if self._compiled is None:
            import jinja2

            env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                                     autoescape=False)
            try:
                self._compiled = env.from_string(self.text)
            except jinja2.TemplateSyntaxError as exc:
                raise RagcovError(f"{self.source}: bad prompt template ({exc})") from exc
        try:
            rendered = self._compiled.render(  # type: ignore[attr-defined]
                passage="\n\n".join(p.strip() for p in passages), passages=passages,
                language=language_name(passages) or "")
        except Exception as exc:  # jinja2.UndefinedError and friends
            raise RagcovError(f"{self.source}: cannot render prompt template ({exc})") from exc
        return rendered

    def example_lines(self) -> list[str]:
        """Lines of the template's fixed text: a question equal to one is a copied example."""
        out = []
        for line in self.text.splitlines():
            line = line.strip()
            if not line or "{{" in line or "{%" in line:
                continue
            if ":" in line[:20]:
                line = line.split(":", 1)[1].strip()
            if line:
                out.append(line)
        return out


def load_template(path: str | os.PathLike[str] | None, mode: str) -> PromptTemplate:
    """A user's template file, or the built-in one for ``mode`` (completion or chat)."""
    if path is not None:
        p = Path(path)
        text = read_text(p)
        if "{{" not in text:
            raise RagcovError(f"{p}: a prompt template must use {{{{ passage }}}} or "
                              "{{ passages }}")
        return PromptTemplate(text, str(p))
    if mode not in BUILTIN:
        raise RagcovError(f"unknown prompt mode {mode!r}: expected completion or chat")
    res = files("ragcov.generation").joinpath("prompts", BUILTIN[mode])
    return PromptTemplate(res.read_text(encoding="utf-8"), f"built-in {BUILTIN[mode]}")
