"""Text and metadata out of a stored row, whichever framework wrote it.

LangChain writes ``page_content`` (or ``text``) and a ``metadata`` object; LlamaIndex
writes ``text`` or a serialised ``_node_content``; hand-built stores put their fields
at the top level. The first text key found is the chunk's text and everything else is
its metadata (a nested ``metadata`` object wins over top-level fields).

A LlamaIndex vector store (``QdrantVectorStore``, ``ChromaVectorStore`` ...) writes each
node through ``node_to_metadata_dict``: the node itself, its own metadata included, as
JSON in ``_node_content``, and ``document_id``/``doc_id``/``ref_doc_id`` at the top level
set to the node's source document, or to the string ``"None"`` when it has none (nodes
built by hand), over any ``doc_id`` the app's metadata had. :func:`llamaindex_row`
reads the node back: the app's metadata, its real source document, its text, and the
text LlamaIndex embedded (its metadata template and the text: ``MetadataMode.EMBED``),
which is what the stored vector was made from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TEXT_KEYS = ("page_content", "text", "document", "content", "chunk")
NODE_CONTENT = "_node_content"
# Written by node_to_metadata_dict beside the node; none of it is the app's metadata.
LLAMAINDEX_INTERNAL = ("_node_content", "_node_type")
LLAMAINDEX_DOC_KEYS = ("document_id", "doc_id", "ref_doc_id")
SOURCE = "1"  # NodeRelationship.SOURCE, as a node's JSON keys its relationships


def split_payload(payload: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The text and the metadata of a row; ``_node_content`` stays in the metadata for
    :func:`llamaindex_row`, which every store's rows pass through."""
    data = dict(payload or {})
    text = ""
    for key in TEXT_KEYS:
        if isinstance(data.get(key), str):
            text = data.pop(key)
            break
    nested = data.pop("metadata", None)
    metadata = {**data, **nested} if isinstance(nested, dict) else data
    return text, metadata


@dataclass(frozen=True, slots=True)
class FrameworkRow:
    """A row as the framework that wrote it meant it."""

    text: str
    metadata: dict[str, Any]
    embed_text: str | None = None  # what the framework embedded, where it is not ``text``
    framework: str | None = None  # "LlamaIndex" when the row is a serialised node


def _node(metadata: dict[str, Any]) -> dict[str, Any] | None:
    raw = metadata.get(NODE_CONTENT)
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    try:
        node = json.loads(raw)
    except ValueError:
        return None
    return node if isinstance(node, dict) else None


def node_text(node: dict[str, Any]) -> str:
    """A serialised node's text: ``text``, or ``text_resource.text`` (newer ``Node``s)."""
    text = node.get("text")
    if isinstance(text, str):
        return text
    resource = node.get("text_resource")
    if isinstance(resource, dict) and isinstance(resource.get("text"), str):
        return str(resource["text"])
    return ""


def llamaindex_embed_text(node: dict[str, Any], text: str) -> str:
    """``node.get_content(metadata_mode=MetadataMode.EMBED)`` of a serialised node.

    Each metadata entry not in ``excluded_embed_metadata_keys`` through
    ``metadata_template``, joined by the node's separator, then ``text_template`` around
    the metadata and the text; the text alone when no metadata is embedded. Written out
    here (the same steps as LlamaIndex's ``TextNode``) so a store LlamaIndex wrote is read
    without LlamaIndex installed; a test holds it equal to LlamaIndex's own.
    """
    meta = node.get("metadata") if isinstance(node.get("metadata"), dict) else {}
    excluded = set(node.get("excluded_embed_metadata_keys") or [])
    template = node.get("metadata_template") or "{key}: {value}"
    separator = node.get("metadata_seperator", node.get("metadata_separator", "\n"))
    text_template = node.get("text_template") or "{metadata_str}\n\n{content}"
    metadata_str = str(separator).join(
        str(template).format(key=key, value=str(value))
        for key, value in meta.items() if key not in excluded).strip()
    if not metadata_str:
        return text
    return str(text_template).format(content=text, metadata_str=metadata_str).strip()


def _source_id(node: dict[str, Any]) -> str | None:
    relationships = node.get("relationships")
    source = relationships.get(SOURCE) if isinstance(relationships, dict) else None
    node_id = source.get("node_id") if isinstance(source, dict) else None
    return str(node_id) if node_id not in (None, "", "None") else None


def llamaindex_row(text: str, metadata: dict[str, Any]) -> FrameworkRow:
    """The row a LlamaIndex vector store wrote, read back as the node it was; other rows
    as they are.

    The metadata is the node's own (the app's keys, not the ``"None"`` document ids
    written over them), with ``ref_doc_id`` added where the node has a source document;
    the text is the one stored beside the row (the node's when the store kept none).
    """
    node = _node(metadata)
    if node is None:
        return FrameworkRow(text, metadata)
    own = node.get("metadata") if isinstance(node.get("metadata"), dict) else {}
    top = {key: value for key, value in metadata.items()
           if key not in LLAMAINDEX_INTERNAL and key not in own
           and not (key in LLAMAINDEX_DOC_KEYS and value in (None, "", "None"))}
    meta = {**own, **top}
    source = _source_id(node)
    if source is not None:
        meta.setdefault("ref_doc_id", source)
    stored = node_text(node)
    text = text or stored
    embedded = llamaindex_embed_text(node, text)
    return FrameworkRow(text, meta, embedded if embedded != text else None, "LlamaIndex")
