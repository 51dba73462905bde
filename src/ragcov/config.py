"""Settings from ``[tool.ragcov]`` in pyproject.toml or from ragcov.toml.

Flat keys (``k = 10``, ``data_file = "cov/.ragcov"``) apply to every command that
has an option of that name; a ``[tool.ragcov.<command>]`` table (``[<command>]`` in
ragcov.toml) applies to one command. Flags on the command line win. Unknown keys
are an error so a typo is never silently ignored.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragcov.errors import RagcovError

#: The most digits after the decimal point a report prints: a coverage has no more meaning
#: than that, and ``precision = 1000`` printed a thousand digits.
MAX_PRECISION = 10

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def find_config(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """ragcov.toml wins over pyproject.toml; the first directory upward that has either."""
    here = (start or Path.cwd()).resolve()
    for folder in [here, *here.parents]:
        own, pyproject = folder / "ragcov.toml", folder / "pyproject.toml"
        try:
            has_own, has_pyproject = own.is_file(), pyproject.is_file()
        except PermissionError:
            continue  # a folder this user may not look into holds no settings for it
        if has_own:
            return own, _load(own)
        if has_pyproject:
            section = _ragcov_section(pyproject)
            if section is not None:
                return pyproject, section
    return None


def config_files(start: Path | None = None) -> list[Path]:
    """The files that may configure this command (``RAGCOV_RCFILE``, and the nearest
    ragcov.toml and pyproject.toml upward), without reading them: no report may be
    written over the settings it was made with."""
    found = [Path(os.environ["RAGCOV_RCFILE"])] if os.environ.get("RAGCOV_RCFILE") else []
    here = (start or Path.cwd()).resolve()
    for name in ("ragcov.toml", "pyproject.toml"):
        for folder in [here, *here.parents]:
            try:
                if (folder / name).is_file():
                    found.append(folder / name)
                    break
            except PermissionError:
                continue
    return found


def _ragcov_section(pyproject: Path) -> dict[str, Any] | None:
    """A pyproject.toml's ``[tool.ragcov]`` table, or None when it has none."""
    tool = _load(pyproject).get("tool")
    # ``tool`` that is no table is another tool's problem: there is no ragcov section.
    section = tool.get("ragcov") if isinstance(tool, dict) else None
    if section is not None and not isinstance(section, dict):
        raise RagcovError(f"{shown_path(pyproject)}: [tool.ragcov] must be a table of "
                          f"settings, got {type(section).__name__} {section!r}")
    return section


def read_config(path: Path) -> tuple[Path, dict[str, Any]]:
    """An explicit config file (``--rcfile``, like coverage.py's): no search, and it must exist.

    A pyproject.toml gives its ``[tool.ragcov]`` section; any other file is read as
    ragcov.toml is.
    """
    if not path.is_file():
        raise RagcovError(f"{path}: {_not_a_file(path)} (given by --rcfile)")
    if path.name == "pyproject.toml":
        return path, _ragcov_section(path) or {}
    return path, _load(path)


def _not_a_file(path: Path) -> str:
    """What a path that is not a config file is, in a reader's words."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return "no such config file"
    if stat.S_ISDIR(mode):
        return "a folder, not a config file (give the ragcov.toml or pyproject.toml in it)"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a config file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a config file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a config file"
    return "not a regular file"


def _load(path: Path) -> dict[str, Any]:
    from ragcov.files import read_text

    text = read_text(path)  # bytes that are not UTF-8: an error naming the line
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RagcovError(f"{path}: invalid TOML ({exc})") from exc
    except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib lets the codec's error out
        raise RagcovError(f"{path}: invalid TOML (not UTF-8 text: byte {exc.start})") from exc


# Options whose meaning differs between commands (``--format`` of ``report`` is not
# ``--format`` of ``import``; ``--model`` of ``run`` is an embedding model, of
# ``generate`` an LLM) apply as flat keys only to the commands named here; anywhere
# else they belong in that command's own table.
FLAT_SCOPE: dict[str, frozenset[str]] = {
    "format": frozenset({"report"}),
    "model": frozenset({"run", "index"}),
    "output": frozenset(),
    "directory": frozenset({"html"}),
    # A flat fail_under gates total coverage in every reporter, as coverage.py's [report]
    # fail_under does; gap's traffic-weighted gate is another number, set in [gap].
    "fail_under": frozenset({"report", "json", "xml", "lcov", "html", "badge"}),
    "fail_under_text": frozenset({"report", "json", "xml", "lcov", "html", "badge"}),
    # Judges topics, so it needs --by topic in report: flat, it is the topics command's gate.
    "min_topic_coverage": frozenset({"topics"}),
}


def default_map(settings: dict[str, Any], commands: dict[str, Iterable[str]],
                source: Path | str = "config") -> dict[str, dict[str, Any]]:
    """Turn settings into click's per-command ``default_map``.

    ``commands`` maps each command name to the names of its options.
    """
    known = {name for names in commands.values() for name in names}
    flat = {k.replace("-", "_"): v for k, v in settings.items() if not isinstance(v, dict)}
    where = shown_path(source)
    top = table_name(source)
    tool = settings.get("tool")
    if top == "" and isinstance(tool, dict) and "ragcov" in tool:
        raise RagcovError(f"{where}: [tool.ragcov] is pyproject.toml's table; in {where} drop the "
                          "prefix: flat keys at the top ([tool.ragcov] fail_under = 80 is "
                          "fail_under = 80), [report] for [tool.ragcov.report]")
    for table, value in settings.items():
        if isinstance(value, dict) and table not in commands:
            raise RagcovError(f"{where}: unknown table [{top}{table}]"
                              f"{_did_you_mean(table, commands, top)}; tables are commands: "
                              f"{', '.join(sorted(commands))}")
    unknown = sorted(set(flat) - known)
    if unknown:
        inside = f" in [{top.rstrip('.')}]" if top else ""
        raise RagcovError(f"{where}: unknown setting(s) {', '.join(unknown)}{inside}"
                          f"{_did_you_mean(unknown[0], known)}")
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
            raise RagcovError(f"{where}: [{top}{command}] has unknown setting(s) "
                              f"{', '.join(bad)}{_did_you_mean(bad[0], names)}")
        merged = {k: v for k, v in flat.items()
                  if k in names and command in FLAT_SCOPE.get(k, frozenset({command}))}
        merged.update(own)
        if merged:
            out[command] = merged
    return out


def table_name(source: Path | str) -> str:
    """How a table is written in ``source``: ``tool.ragcov.`` in pyproject.toml, bare elsewhere."""
    return "tool.ragcov." if Path(str(source)).name == "pyproject.toml" else ""


def shown_path(source: Path | str) -> str:
    """The config file as the user would name it: relative to the working folder when inside."""
    text = str(source)
    try:
        rel = os.path.relpath(text)
    except ValueError:  # another drive on Windows
        return text
    return rel if not rel.startswith("..") else text


def _did_you_mean(name: str, known: Iterable[str], table: str | None = None) -> str:
    """`` (did you mean X?)`` for the closest known name; ``table`` shows it as ``[table X]``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if not close:
        return ""
    shown = f"[{table}{close[0]}]" if table is not None else close[0]
    return f" (did you mean {shown}?)"


def check_values(settings: dict[str, Any], params: Mapping[str, Mapping[str, Any]],
                 source: Path | str) -> None:
    """Raise, blaming the file and the key, for a value the option would refuse.

    ``params`` maps each command to its click parameters by name. Without this click
    would refuse the value later and blame the command-line flag (``--k``), which the
    user never typed.
    """
    # (the table, None for the flat keys; its settings; the commands they reach)
    tables: list[tuple[str | None, dict[str, Any], list[str]]] = [
        (None, {k: v for k, v in settings.items() if not isinstance(v, dict)}, list(params))]
    tables += [(name, value, [name]) for name, value in settings.items()
               if isinstance(value, dict) and name in params]
    for table, values, scope in tables:
        for key, value in values.items():
            name = key.replace("-", "_")
            param = next((params[c][name] for c in scope if name in params[c]), None)
            if param is None:
                continue
            problem = value_problem(param, value)
            if problem:
                raise RagcovError(f"{setting_where(source, table, key, value)}: {problem}")


def setting_where(source: Path | str, table: str | None, key: str, value: Any) -> str:
    """A setting as an error names it: ``pyproject.toml: [tool.ragcov.run] k = 'one'``,
    the key as written; ``table`` None for a flat key."""
    top = table_name(source)
    label = f"{top}{table}" if table is not None else top.rstrip(".")
    shown = f"[{label}] " if label else ""
    return f"{shown_path(source)}: {shown}{key} = {value!r}"


def toml_type_problem(annotation: Any, value: Any) -> str | None:
    """One strict rule for every key: a value has the TOML type of its option.

    TOML has integers, floats, booleans and strings, so nothing is read from text: ``k =
    "5"`` is refused as ``k = 5.5`` and ``k = true`` are (a string where a number belongs
    is a quoting slip, and a tool that guesses hides the next one), and ``omit = [5]``
    is refused where globs are strings.
    """
    if annotation is int:
        ok, problem = isinstance(value, int) and not isinstance(value, bool), "not an integer"
    elif annotation is float:
        ok, problem = (isinstance(value, (int, float)) and not isinstance(value, bool),
                       "not a number")
    elif annotation is bool:
        ok, problem = isinstance(value, bool), "not true or false"
    elif annotation in (str, Path) or annotation is None:
        return None if isinstance(value, str) else "not a string (quote it)"
    else:
        return None
    if ok:
        return None
    return problem + ("; write it without quotes" if _reads_as(annotation, value) else "")


def _reads_as(annotation: Any, value: Any) -> bool:
    """A string that would be the right value without its quotes (``"5"`` for an integer)."""
    if not isinstance(value, str):
        return False
    try:
        tomllib.loads(f"v = {value}")["v"]
    except (tomllib.TOMLDecodeError, ValueError):
        return False
    return toml_type_problem(annotation, tomllib.loads(f"v = {value}")["v"]) is None


def value_problem(param: Any, value: Any) -> str | None:
    """Why ``param`` (a typer/click parameter) would refuse ``value`` from a config file."""
    many = bool(getattr(param, "multiple", False)) or getattr(param, "nargs", 1) == -1
    if many and not isinstance(value, list):
        return "expected a list"
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    if many:
        annotation = next(iter(typing.get_args(annotation)), str)
    for one in (value if many else [value]):
        if isinstance(one, (dict, list)):
            return "expected a single value"
        problem = toml_type_problem(annotation, one)
        if problem:
            return problem
    try:
        if hasattr(param, "get_runtime_param"):
            param.get_runtime_param().coerce(value, param=param, ctx=None)
        elif getattr(param, "type", None) is not None:
            param.type.convert(value, param, None)
    except Exception as exc:  # click's BadParameter, from typer's copy of click or click's
        if not any(cls.__name__ in ("BadParameter", "UsageError") for cls in type(exc).__mro__):
            raise
        message = getattr(exc, "message", None) or str(exc)
        return {int: "not an integer", float: "not a number"}.get(annotation,  # type: ignore[call-overload]
                                                                   message.rstrip("."))
    return None


#: The keys that choose what a report counts (``ragcov.scope.ReportScope``).
SCOPE_KEYS = ("include", "omit", "exclude", "exclude_docs", "min_chunk_chars", "reachable",
              "include_generated")


def reader_config(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The config file for readers that do not go through the CLI's options (the pytest
    plugin): ``RAGCOV_RCFILE`` names it as ``--rcfile`` does, else the search upward from
    ``start``."""
    rcfile = os.environ.get("RAGCOV_RCFILE")
    return read_config(Path(rcfile)) if rcfile else find_config(start)


def scope_settings(command: str, start: Path | None = None) -> dict[str, Any]:
    """The scope keys a report command reads from the config file, as the CLI applies them:
    flat keys for every report, the command's own table over them; checked, so a wrong
    value is one line naming the file and the key.

    For readers that do not go through the CLI's options (the pytest plugin's reports):
    the file is :func:`reader_config`'s.
    """
    found = reader_config(start)
    if found is None:
        return {}
    source, settings = found
    own = settings.get(command, {})
    merged = {k.replace("-", "_"): v for k, v in settings.items() if not isinstance(v, dict)}
    if isinstance(own, dict):
        merged.update({k.replace("-", "_"): v for k, v in own.items()})
    values = {k: v for k, v in merged.items() if k in SCOPE_KEYS}
    for key, value in values.items():
        if key == "min_chunk_chars":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif key in ("reachable", "include_generated"):
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not ok:
            want = {"min_chunk_chars": "an integer", "reachable": "true or false",
                    "include_generated": "true or false"}.get(
                key, "a list of strings")
            raise RagcovError(f"{shown_path(source)}: {key} = {value!r}: expected {want}")
    return values


#: What ``pytest --ragcov`` reads from the config file besides the scope, and from which
#: command's table (over the flat keys): it records as ``run`` does and gates as
#: ``report`` does, so one file configures both doors alike.
PLUGIN_KEYS = {"k": "run", "data_file": "run", "fail_under": "report", "precision": "report",
               "device": "run"}


def plugin_settings(start: Path | None = None) -> tuple[Path | None, dict[str, Any]]:
    """The config file's ``k``, ``data_file``, ``fail_under``, ``precision`` and ``device`` for the
    pytest plugin (the file :func:`reader_config` finds), checked, with the file."""
    found = reader_config(start)
    if found is None:
        return None, {}
    source, settings = found
    values: dict[str, Any] = {}
    flat = {k.replace("-", "_"): v for k, v in settings.items() if not isinstance(v, dict)}
    for key, command in PLUGIN_KEYS.items():
        own = settings.get(command)
        named = {k.replace("-", "_"): v for k, v in own.items()} if isinstance(own, dict) else {}
        if key in named:
            value, where = named[key], f"[{table_name(source)}{command}] {key}"
        elif key in flat:
            value, where = flat[key], key
        else:
            continue
        whole = isinstance(value, int) and not isinstance(value, bool)
        number = (isinstance(value, (int, float)) and not isinstance(value, bool)
                  and math.isfinite(value))
        problem = {
            "k": None if whole and value >= 1 else "not a whole number of at least 1",
            "precision": None if whole and 0 <= value <= MAX_PRECISION
            else f"not a whole number from 0 to {MAX_PRECISION}",
            "fail_under": None if number and 0 <= value <= 100 else "not a percentage from 0 to 100",
            "data_file": None if isinstance(value, str) and value else "not a file name",
            "device": None if isinstance(value, str) and value else "not a device name",
        }[key]
        if problem:
            raise RagcovError(f"{shown_path(source)}: {where} = {value!r}: {problem}")
        values[key] = value
    return source, values
