"""Text and metadata out of a stored row, whichever framework wrote it.

LangChain writes ``page_content`` (or ``text``) and a ``metadata`` object; LlamaIndex
writes ``text`` or a serialised ``_node_content``; hand-built stores put their fields
at the top level. The first text key found is the chunk's text and everything else is
its metadata (a nested ``metadata`` object wins over top-level fields).
"""

from __future__ import annotations

import json
from typing import Any

TEXT_KEYS = ("page_content", "text", "document", "content", "chunk")


def split_payload(payload: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    data = dict(payload or {})
    text = ""
    for key in TEXT_KEYS:
        if isinstance(data.get(key), str):
            text = data.pop(key)
            break
    node = data.pop("_node_content", None)
    if not text and isinstance(node, str):
        try:
            text = str(json.loads(node).get("text") or "")
        except (ValueError, AttributeError):
            text = ""
    nested = data.pop("metadata", None)
    metadata = {**data, **nested} if isinstance(nested, dict) else data
    return text, metadata
