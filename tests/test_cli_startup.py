"""What makes a reading command start fast changes nothing a user sees.

* ``ragcov COMMAND`` without a config file builds that command alone
  (``cli/commands.app_for``): its help, its errors and its exit codes are the whole
  app's, for every command.
* Option values are converted without pydantic where they are plain
  (``cli/coercion.py``): every value it converts, it converts as typer's own adapter
  does, and every value that adapter refuses it leaves to the adapter (so the message
  is typer's).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragcov.cli import coercion
from ragcov.cli.commands import NAMES, SOURCES, app_for, build, whole_app


def _invoke(app, args: list[str]):
    result = CliRunner().invoke(app, args, prog_name="ragcov")
    return result.exit_code, result.output


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGCOV_RCFILE", raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    return tmp_path


def test_one_command_is_built_where_nothing_else_can_matter(no_config: Path) -> None:
    whole = whole_app()
    assert app_for(["report"]) is not whole
    for args in ([], ["--help"], ["--version"], ["reprot"], ["--rcfile", "x.toml", "report"]):
        assert app_for(args) is whole, args
    (no_config / "pyproject.toml").write_text("[tool.ragcov]\nk = 3\n")
    assert app_for(["report"]) is whole  # its keys are checked against every command's options


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_command_alone_has_the_whole_apps_help(no_config: Path, name: str) -> None:
    alone = build([name])
    # A command, or a group of subcommands (qrels check): one either way.
    assert len(alone.registered_commands) + len(alone.registered_groups) == 1
    assert _invoke(alone, [name, "--help"]) == _invoke(whole_app(), [name, "--help"])


def test_errors_and_exit_codes_are_the_whole_apps(no_config: Path) -> None:
    for args in (["report", "--precision", "abc"], ["report", "--no-such-option"],
                 ["json", "--fail-under", "x"], ["run"], ["select", "--budget", "1.5"],
                 ["report", "extra"]):
        alone = _invoke(app_for(args), args)
        assert alone == _invoke(whole_app(), args), args
        assert alone[0] != 0


def test_the_list_of_commands_is_the_order_of_help() -> None:
    # typer lists a group after the commands: groups come last in SOURCES too.
    app = whole_app()
    assert [name for name, _, _ in SOURCES] == [c.name for c in app.registered_commands] + \
        [g.name for g in app.registered_groups]


# --------------------------------------------------------------- coercion
def _typer_says(annotation, value):
    """What typer's own adapter makes of ``value`` for an option of ``annotation``."""
    from typer._coercion import build_runtime_param, resolve_type_descriptor
    from typer.models import OptionInfo

    runtime = build_runtime_param(resolve_type_descriptor(annotation, OptionInfo()))
    try:
        return "ok", runtime._coerce_value(value, param=None, ctx=None)
    except Exception as exc:  # noqa: BLE001 - typer's BadParameter
        return "refused", type(exc).__name__


def _agrees(annotation, value) -> None:
    mine = coercion.plain_value(annotation, value)
    if mine is coercion._DECLINE:
        return  # left to typer's adapter: its answer by construction
    verdict, theirs = _typer_says(annotation, value)
    assert verdict == "ok", (annotation, value, theirs)
    assert type(mine) is type(theirs) and mine == theirs, (annotation, value, mine, theirs)


NUMBERISH = st.text(alphabet="0123456789-+._eE xinfa", max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(NUMBERISH, st.integers(-10**20, 10**20), st.floats(allow_nan=False), st.booleans(),
                 st.none()))
def test_numbers_are_read_as_typer_reads_them(value) -> None:
    if value is None:
        return
    _agrees(int, value)
    _agrees(float, value)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=20), st.booleans(), st.integers(), st.binary(max_size=4)))
def test_text_flags_and_paths_are_read_as_typer_reads_them(value) -> None:
    _agrees(str, value)
    _agrees(bool, value)
    if isinstance(value, str) and "\x00" not in value:
        _agrees(Path, value)
    _agrees(list[str], [value, value])


def test_plain_values_are_converted_and_the_rest_declined() -> None:
    plain = coercion.plain_value
    assert plain(int, "5") == 5 and plain(int, "-12") == -12 and plain(int, 7) == 7
    assert plain(float, "0.5") == 0.5 and plain(float, 3) == 3.0 and type(plain(float, 3)) is float
    assert plain(Path, "out.json") == Path("out.json") and plain(list[str], ("a", "b")) == ["a", "b"]
    for annotation, value in [(int, " 5"), (int, "1_000"), (int, "1.0"), (int, "007"), (int, True),
                              (float, "1e3"), (float, "inf"), (str, b"x"), (Path, ""), (bool, "yes")]:
        assert plain(annotation, value) is coercion._DECLINE, (annotation, value)
