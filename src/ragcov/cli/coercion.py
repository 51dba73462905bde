"""Option values coerced without pydantic where the answer is plain.

typer (0.2x) coerces every option's value through a pydantic ``TypeAdapter``, built the
first time the option is parsed; importing pydantic and building the adapters is about
a third of what ``ragcov report`` spends before it reads the data file. ragcov's options
are all ``str``, ``int``, ``float``, ``bool``, ``Path`` or lists of them, and most values
reach them already in their type (defaults) or as text whose meaning is not in doubt
(``5``, ``0.5``, ``out.json``). Those are converted here, exactly as the adapter would
convert them; anything else (``" 5"``, ``1_000``, ``1.0`` for an integer, a bytes value,
an unknown annotation, a range) goes to typer's own adapter, built when first needed,
so its answers and its error messages are typer's. ``tests/test_cli_coercion.py``
checks the two agree.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?")
_DECLINE = object()  # "not plain: ask typer's adapter"


def plain_value(annotation: Any, value: Any, to_path: Any = None) -> Any:
    """``value`` as ``annotation`` when that is certain, else :data:`_DECLINE`.

    ``to_path(Path)`` finishes a path as typer does (its existence checks); by default
    the bare ``Path``.
    """
    kind = type(value)
    if annotation is str:
        return value if kind is str else _DECLINE
    if annotation is bool:
        return value if kind is bool else _DECLINE
    if annotation is int:
        if kind is int:
            return value
        return int(value) if kind is str and _INT.fullmatch(value) else _DECLINE
    if annotation is float:
        if kind is float:
            return value
        if kind is int:
            return float(value)
        return float(value) if kind is str and _FLOAT.fullmatch(value) else _DECLINE
    if annotation is Path:
        if kind is str and value:
            value = Path(value)
        elif not isinstance(value, Path):
            return _DECLINE
        return to_path(value) if to_path is not None else value
    if get_origin(annotation) is list and isinstance(value, (list, tuple)):
        (item,) = get_args(annotation) or (str,)
        items = [plain_value(item, one, to_path) for one in value]
        return _DECLINE if any(i is _DECLINE for i in items) else items
    return _DECLINE


def install() -> None:
    """Put the plain conversion in front of typer's adapters, where typer is as expected;
    any other typer keeps its own coercion, unchanged."""
    try:
        import typer.core as core
        from typer._coercion import RuntimeParam, TypeDescriptor  # noqa: F401 - the shape we rely on
        from typer._param_types import coerce_cli_path
    except ImportError:  # pragma: no cover - another typer: its own coercion throughout
        return
    original = getattr(core, "build_runtime_param", None)
    if original is None or getattr(original, "ragcov_plain", False):
        return

    @dataclass(frozen=True)
    class PlainFirst(RuntimeParam):
        descriptor: Any = None

        @functools.cached_property
        def adapter(self) -> Any:
            return original(self.descriptor)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info

            def to_path(path: Path) -> Any:
                return coerce_cli_path(path, info, path_type=Path, param=param, ctx=ctx)

            done = plain_value(self.annotation, value, to_path)
            if done is _DECLINE:
                return self.adapter._coerce_value(value, param=param, ctx=ctx)
            return done

    def build(descriptor: Any) -> Any:
        info = descriptor.parameter_info
        if (descriptor.file_annotation is not None or info.parser is not None
                or info.min is not None or info.max is not None or info.path_type is not None):
            return original(descriptor)
        return PlainFirst(parameter_info=info, annotation=descriptor.annotation,
                          descriptor=descriptor)

    build.ragcov_plain = True  # type: ignore[attr-defined]
    core.build_runtime_param = build  # type: ignore[attr-defined]
