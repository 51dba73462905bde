"""The HTML site's "next actions": from the numbers to what to do about them.

A report that stops at 58.8% leaves a team to find the next step; coverage.py's users
go from the report to the line to test. The panel on the index page lists, each with
the command or config line that does it: the documents with the most untested chunks
(the tests to write), the draft tests ``ragcov probe`` found for them, the junk to
exclude, and the tests that can be dropped together. The documents table itself opens
worst first (lowest coverage, then most missing chunks), where the work is.
"""

from __future__ import annotations

from typing import Any

from ragcov.reachability.audit import UNTESTED
from ragcov.scope import Scoped

SHOW_DOCUMENTS = 5


def worst_first(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lowest coverage first, then the most missing chunks, then by name."""
    return sorted(documents, key=lambda d: (d["coverage"], -d["missing"], d["id"]))


def add_next_actions(ctx: dict[str, Any], scoped: Scoped) -> None:
    """``ctx["actions"]``: what to do next, each with its command; the documents worst first."""
    ctx["documents"] = worst_first(ctx["documents"])
    actions: list[dict[str, Any]] = []
    r = scoped.reachability
    missing = [d for d in ctx["documents"] if d["missing"]]
    if missing:
        top = sorted(missing, key=lambda d: (-d["missing"], d["id"]))[:SHOW_DOCUMENTS]
        actions.append({
            "id": "write-tests", "title": "Write tests for the documents with the most missing chunks",
            "items": [{"text": f"{d['id']}: {d['missing']} of {d['chunks']} chunks missing",
                       "href": d["file"]} for d in top],
            "command": "ragcov report --show-missing --sort=-missing"})
    if r is not None:
        drafts = [d for j in range(r.n_chunks)
                  if r.status[j] == UNTESTED and (d := r.draft(j)) is not None]
        if drafts:
            questions = sum(1 for d in drafts if d.is_question)
            copied = len(drafts) - questions
            title = (f"Review and add {questions} draft questions" if not copied else
                     f"Write {copied} questions from the sentences copied from untested chunks"
                     + (f", and review {questions} draft questions" if questions else ""))
            actions.append({
                "id": "drafts", "title": title,
                "items": [{"text": "a draft is what reached an untested chunk, shown on its "
                                   "document's page; a sentence copied from a chunk is no "
                                   "question (it tests nothing new) until rewritten as one",
                           "href": ""}],
                "command": "ragcov probe --corpus CORPUS --drafts-out drafts.jsonl"})
        if r.junk:
            actions.append({
                "id": "exclude", "title": f"Exclude {len(r.junk)} junk chunks (no words, "
                                          "boilerplate, too short) instead of testing them",
                "items": [{"text": "\n".join(r.junk_config), "href": "", "block": True}],
                "command": "add the lines above to ragcov.toml ([tool.ragcov] in pyproject.toml)"})
    else:
        actions.append({
            "id": "probe", "title": "Tell untested chunks from unreachable ones, and get a draft "
                                    "test for each untested chunk",
            "items": [], "command": "ragcov probe --corpus CORPUS --drafts-out drafts.jsonl"})
    droppable = [t for t in ctx.get("redundant", []) if t.get("droppable")]
    if droppable:
        actions.append({
            "id": "drop", "title": f"Drop {len(droppable)} tests together without losing a chunk",
            "items": [{"text": t["id"], "href": f"queries.html#q{t['row']}"}
                      for t in droppable[:SHOW_DOCUMENTS]],
            "command": "ragcov report --redundant"})
    ctx["actions"] = actions
