"""The two consoles every command prints to: results on stdout, diagnostics on stderr."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

from ragcov.controls import SHOWN, escape_controls


class Terminal(Console):
    """A console that writes control characters in printed text as ``\\x1b``.

    Ids and texts from users' data reach every report and message; escaping them at
    the one place text becomes output covers all of them. rich's own control codes
    (cursor moves, styles) are not text and pass unchanged. Strings are escaped before
    rich reads them too, or it would drop a BEL or a carriage return unseen.
    """

    def render_str(self, text: str, **kwargs: Any) -> Any:
        return super().render_str(escape_controls(text, keep="\n\t"), **kwargs)

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and SHOWN.search(segment.text) is not None:
                segment = Segment(escape_controls(segment.text, keep="\n\t"), segment.style)
            yield segment

    def print_text(self, text: str) -> None:
        """``print(text, markup=False)``, written straight to the file where rich would not
        change it: a report's table of 100,000 documents took rich half a second to cut
        into lines and measure, to print them unchanged. A terminal, a recording, a live
        display or a tab (rich expands it) go through rich."""
        shown = escape_controls(text, keep="\n\t")
        if ("\t" in shown or self.is_terminal or self.record
                or getattr(self, "_render_hooks", True) or getattr(self, "_buffer_index", True)):
            self.print(text, markup=False)
            return
        try:
            self.file.write(shown + "\n")  # encoded whole before a byte is written
        except UnicodeEncodeError:  # rich says what to set (PYTHONIOENCODING) as it fails
            self.print(text, markup=False)
            return
        self.file.flush()


# emoji=False: rich turns ":NAME:" into an emoji, and "file.jsonl:100:" or an id ":smile:" is text.
out = Terminal(highlight=False, soft_wrap=True, emoji=False)
err = Terminal(stderr=True, highlight=False, soft_wrap=True, emoji=False)
