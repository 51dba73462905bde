"""Settings from ``[tool.ragcov]`` in pyproject.toml or from ragcov.toml.

Flat keys (``k = 10``, ``data_file = "cov/.ragcov"``) apply to every command that
has an option of that name; a ``[tool.ragcov.<command>]`` table (``[<command>]`` in
ragcov.toml) applies to one command. Flags on the command line win. Unknown keys
are an error so a typo is never silently ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def find_config(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """ragcov.toml wins over pyproject.toml; the first directory upward that has either."""
    here = (start or Path.cwd()).resolve()
    for folder in [here, *here.parents]:
        own = folder / "ragcov.toml"
        if own.is_file():
            return own, _load(own)
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            section = _load(pyproject).get("tool", {}).get("ragcov")
            if section is not None:
                return pyproject, section
    return None


def _load(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RagcovError(f"{path}: invalid TOML ({exc})") from exc


# Options whose meaning differs between commands (``--format`` of ``report`` is not
# ``--format`` of ``import``; ``--model`` of ``run`` is an embedding model, of
# ``generate`` an LLM) apply as flat keys only to the commands named here; anywhere
# else they belong in that command's own table.
FLAT_SCOPE: dict[str, frozenset[str]] = {
    "format": frozenset({"report"}),
    "model": frozenset({"run", "index"}),
    "output": frozenset(),
    "directory": frozenset({"html"}),
}


def default_map(settings: dict[str, Any], commands: dict[str, Iterable[str]],
                source: Path | str = "config") -> dict[str, dict[str, Any]]:
    """Turn settings into click's per-command ``default_map``.

    ``commands`` maps each command name to the names of its options.
    """
    known = {name for names in commands.values() for name in names}
    flat = {k.replace("-", "_"): v for k, v in settings.items() if not isinstance(v, dict)}
    unknown = sorted(set(flat) - known)
    if unknown:
        raise RagcovError(f"{source}: unknown setting(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(known))}")
    unscoped = sorted(k for k in flat if k in FLAT_SCOPE and not FLAT_SCOPE[k])
    if unscoped:
        raise RagcovError(f"{source}: {', '.join(unscoped)} differs from command to command; "
                          "set it in a command's own table, e.g. [tool.ragcov.json]")
    out: dict[str, dict[str, Any]] = {}
    for command, names in commands.items():
        names = set(names)
        own = settings.get(command, {})
        if not isinstance(own, dict):
            own = {}
        own = {k.replace("-", "_"): v for k, v in own.items()}
        bad = sorted(set(own) - names)
        if bad:
            raise RagcovError(f"{source}: [{command}] has unknown setting(s) {', '.join(bad)}")
        merged = {k: v for k, v in flat.items()
                  if k in names and command in FLAT_SCOPE.get(k, frozenset({command}))}
        merged.update(own)
        if merged:
            out[command] = merged
    return out
