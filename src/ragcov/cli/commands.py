"""The ``ragcov`` typer app: every command registered here, in one list.

Command modules are plain functions with typer annotations and know nothing of the
app; this module is the only place that wires them in, so there is no registration
by import side effect and no module imports the app back.

A command's module is imported when its command is built. ``ragcov COMMAND`` with no
config file to read builds that one command (:func:`app_for`): its options, help and
errors are the whole app's (``tests/test_cli_startup.py``), and it skips importing and
building the others, a good part of a reading command's start-up. With a
config file the whole app is built, since its keys are checked against every
command's options.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from ragcov.cli.coercion import install as plain_coercion

plain_coercion()  # option values without pydantic where they are plain (cli/coercion.py)


class _Flag(TyperOption):
    """A flag takes no value, so its help shows no ``<bool>`` placeholder for one."""

    def display_type_rich(self, ctx):  # type: ignore[no-untyped-def]
        return None


def _plain_flags(params: list) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.__class__ = _Flag


class _PlainFlags:
    """Commands and the group alike show flags without a ``<bool>`` placeholder."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        _plain_flags(self.params)  # type: ignore[attr-defined]

    def get_help_option(self, ctx):  # type: ignore[no-untyped-def]
        option = super().get_help_option(ctx)  # type: ignore[misc]
        _plain_flags([option])
        return option


class _Command(_PlainFlags, TyperCommand):
    pass


class _Group(_PlainFlags, TyperGroup):
    pass


def _show_version(value: bool) -> None:
    if value:
        from ragcov.version import __version__

        typer.echo(f"ragcov {__version__}")
        raise typer.Exit()


#: Long option -> (the config file's setting that gave the invoked command its value,
#: every spelling of the option).
CONFIGURED: dict[str, tuple[str, tuple[str, ...]]] = {}


def blame_config(message: str, args: list[str]) -> str:
    """A command's range check of a value the config file gave (``--flag must ...``),
    worded as the file's error: ``ragcov.toml: [diff] fail_under_delta = -3: must be
    ...``, not the flag's. Any other message, or a flag given on the command line in
    any spelling, is left as it is."""
    flag, _, rest = message.partition(" ")
    if flag not in CONFIGURED or not rest.startswith("must "):
        return message
    setting, spellings = CONFIGURED[flag]
    if any(a == s or a.startswith(s + "=") or (len(s) == 2 and a.startswith(s))
           for a in args for s in spellings):
        return message
    return f"{setting}: {rest}"


def _settings(ctx: typer.Context, version: Annotated[bool, typer.Option(
        "--version", callback=_show_version, is_eager=True,
        help="Show the version and exit.")] = False,
        rcfile: Annotated[Path | None, typer.Option(
            "--rcfile", envvar="RAGCOV_RCFILE", metavar="FILE",
            help="The config file to read (ragcov.toml format, or a pyproject.toml's "
            "[tool.ragcov]) instead of searching upward from here; may follow the command.")]
        = None) -> None:
    """Apply [tool.ragcov] / ragcov.toml settings as defaults for every command."""
    CONFIGURED.clear()  # main() may run again in one process (tests, scripts)
    from ragcov.config import check_values, default_map, find_config, read_config, setting_where

    found = read_config(rcfile) if rcfile is not None else find_config()
    if found is None:
        return
    path, settings = found
    # Known names come from the registered commands' own options, never from a list
    # kept by hand, so a new option is a valid setting the moment it exists.
    params = {name: {p.name: p for p in cmd.params if p.name}
              for name, cmd in getattr(ctx.command, "commands", {}).items()}
    ctx.default_map = default_map(settings, {c: list(ps) for c, ps in params.items()}, path)
    check_values(settings, params, path)
    # Where each of the invoked command's settings came from: a value the file gave that
    # the command then refuses ("--fail-under must be ...") is blamed on the file's key.
    command = ctx.invoked_subcommand
    given = (ctx.default_map or {}).get(command or "", {})
    own = settings.get(command) if isinstance(settings.get(command), dict) else {}
    flat = {k: v for k, v in settings.items() if not isinstance(v, dict)}
    for name, value in given.items():
        param = params.get(command or "", {}).get(name)
        # As check_values words the file's errors: the table and the key as written.
        key = next((k for k in own if k.replace("-", "_") == name), None)
        table = command if key is not None else None
        if key is None:
            key = next((k for k in flat if k.replace("-", "_") == name), name)
        opts = tuple(getattr(param, "opts", ())) + tuple(getattr(param, "secondary_opts", ()))
        for flag in opts:
            if flag.startswith("--"):
                CONFIGURED[flag] = (setting_where(path, table, key, value), opts)


# (name, module, function): the order is the order of `ragcov --help`.
SOURCES = [
    ("run", "ragcov.cli.measure", "run"),
    ("report", "ragcov.cli.report", "report"),
    ("json", "ragcov.cli.report", "json_cmd"),
    ("combine", "ragcov.cli.combine", "combine"),
    ("erase", "ragcov.cli.erase", "erase"),
    ("index", "ragcov.cli.measure", "index"),
    ("demo", "ragcov.cli.demo", "demo"),
    ("faults", "ragcov.cli.faults", "faults"),
    ("generate", "ragcov.cli.generate", "generate"),
    ("html", "ragcov.cli.html", "html"),
    ("xml", "ragcov.cli.ci_formats", "xml"),
    ("lcov", "ragcov.cli.ci_formats", "lcov"),
    ("badge", "ragcov.cli.ci_formats", "badge"),
    ("import", "ragcov.cli.imports", "import_cmd"),
    ("select", "ragcov.cli.select", "select_cmd"),
    ("diff", "ragcov.cli.diff", "diff"),
    ("gap", "ragcov.cli.gap", "gap"),
    ("probe", "ragcov.cli.probe", "probe"),
    ("drift", "ragcov.cli.drift", "drift"),
    ("topics", "ragcov.cli.topics", "topics"),
    ("qrels", "ragcov.cli.qrels", "app"),
]
NAMES = frozenset(name for name, _, _ in SOURCES)


def _function(module: str, function: str) -> Any:
    return getattr(importlib.import_module(module), function)


def build(names: Iterable[str] | None = None) -> typer.Typer:
    """The app with every command, or with only ``names``."""
    wanted = None if names is None else set(names)
    built = typer.Typer(
        name="ragcov",
        cls=_Group,
        help="Chunk Coverage for RAG retrievers: how much of the corpus does your test suite retrieve?",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    built.callback()(_settings)
    for name, module, function in SOURCES:
        if wanted is None or name in wanted:
            found = _function(module, function)
            if isinstance(found, typer.Typer):  # a group of subcommands (qrels check)
                for info in found.registered_commands:
                    info.cls = _Command
                built.add_typer(found, name=name, cls=_Group)
            else:
                built.command(name, cls=_Command)(found)
    return built


_WHOLE: list[typer.Typer] = []


def whole_app() -> typer.Typer:
    if not _WHOLE:
        _WHOLE.append(build())
    return _WHOLE[0]


def app_for(args: list[str]) -> typer.Typer:
    """The app to run ``args`` with: the invoked command alone when nothing but its own
    options can matter (it comes first, and no config file will be read), else the whole
    app (help, the version, a mistyped command, ``--rcfile``, a config file found)."""
    if not args or args[0] not in NAMES or os.environ.get("RAGCOV_RCFILE"):
        return whole_app()
    from ragcov.config import find_config
    from ragcov.errors import RagcovError

    try:
        if find_config() is not None:
            return whole_app()
    except RagcovError:  # the whole app's callback says what is wrong with the file
        return whole_app()
    return build([args[0]])


def __getattr__(name: str) -> Any:
    """``app`` (every command) and ``COMMANDS`` (name, function), built on first use."""
    if name == "app":
        return whole_app()
    if name == "COMMANDS":
        return [(command, _function(module, function)) for command, module, function in SOURCES]
    raise AttributeError(f"module 'ragcov.cli.commands' has no attribute {name!r}")
