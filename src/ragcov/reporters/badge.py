"""A shields.io-style "flat" badge of the total, for a README.

Drawn here (no network, no service): two rounded boxes, the label on grey and the
percentage on a colour chosen by thresholds. Text goes through XML escaping.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape as _html_escape

from ragcov.errors import RagcovError

# shields.io's named colours, lowest band first.
COLOURS = ("#e05d44", "#dfb317", "#97ca00", "#4c1")  # red, yellow, green, brightgreen
DEFAULT_THRESHOLDS = (50.0, 75.0, 90.0)


def parse_thresholds(text: str) -> tuple[float, ...]:
    """``"50,75,90"``: three ascending percentages, the lower bounds of yellow, green, brightgreen."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise RagcovError(f"--thresholds must be three percentages like 50,75,90, got {text!r}"
                          ) from None
    if len(values) != len(COLOURS) - 1 or list(values) != sorted(values) or not all(
            0 <= v <= 100 for v in values):
        raise RagcovError(f"--thresholds must be three ascending percentages from 0 to 100 "
                          f"like 50,75,90, got {text!r}")
    return values


def colour_for(percent: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> str:
    band = sum(1 for t in thresholds if percent >= t)
    return COLOURS[band]


def escape(text: str) -> str:
    """XML text escaping. Not ``xml.sax.saxutils``: it imports urllib.request, ssl and
    http.client, a sixth of the badge command's start-up."""
    return _html_escape(text, quote=False)


def quoteattr(text: str) -> str:
    """A double-quoted XML attribute value."""
    return '"' + _html_escape(text, quote=True).replace("\n", "&#10;").replace(
        "\r", "&#13;").replace("\t", "&#9;") + '"'


def _width(text: str) -> int:
    # Verdana 11px: about 7 px a character, narrower for digits' neighbours ".%".
    return int(sum(4 if ch in ".,:;i|l " else 7 for ch in text)) + 10


def badge_svg(value: str, colour: str, label: str = "chunk coverage") -> str:
    lw, vw = _width(label), _width(value)
    w = lw + vw
    title = f"{label}: {value}"
    font = "Verdana,Geneva,DejaVu Sans,sans-serif"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" '
        f'aria-label={quoteattr(title)}>'
        f"<title>{escape(title)}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
        'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/>'
        f'<rect x="{lw}" width="{vw}" height="20" fill="{colour}"/>'
        f'<rect width="{w}" height="20" fill="url(#s)"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="{font}" font-size="11">'
        f'<text x="{lw / 2:g}" y="15" fill="#010101" fill-opacity=".3">{escape(label)}</text>'
        f'<text x="{lw / 2:g}" y="14">{escape(label)}</text>'
        f'<text x="{lw + vw / 2:g}" y="15" fill="#010101" fill-opacity=".3">{escape(value)}</text>'
        f'<text x="{lw + vw / 2:g}" y="14">{escape(value)}</text></g></svg>\n'
    )
