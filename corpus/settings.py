"""Settings declared once: a config dataclass field carries its default and its help text, and
the command line (``workflows.config.with_settings``) is derived from it. Pure Python, so every
core package can declare its settings without knowing Luigi."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import Field, field, fields
from typing import Any


def setting(default: Any, help: str, *, choices: Iterable[str] | Callable[[], Iterable[str]] = (), significant: bool = True,  # noqa: A002
            minimum: float | None = None) -> Any:
    """A dataclass field that is also a command-line setting. ``choices`` may be a function when
    the allowed values are only known once the module is loaded (a registry filled below it);
    ``significant=False`` settings (device, checkpoint interval) do not change what is computed;
    ``minimum``: the smallest value a number may take (a count of pairs, a size)."""
    return field(default=default, metadata={"help": help, "choices": choices, "significant": significant, "minimum": minimum})


def settings_of(config_type: type) -> list[Field]:
    """The fields of the dataclass ``config_type`` declared with :func:`setting`, in order."""
    return [f for f in fields(config_type) if "help" in f.metadata]


def choices_of(setting_field: Field) -> tuple[str, ...]:
    choices = setting_field.metadata["choices"]
    return tuple(choices() if callable(choices) else choices)
