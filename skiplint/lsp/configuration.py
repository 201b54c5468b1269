"""The client's settings and the CLI's configuration for each open document (no pygls here)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from skiplint import config

#: The default debounce: edits closer together than this are analysed once the typing pauses.
DEBOUNCE_S = 0.05
#: The configuration files the CLI reads, by name.
CONFIG_NAMES = frozenset(name for name, _ in config.CONFIG_FILES)


@dataclass
class Settings:
    """The client's settings: the CLI's options of the same names, and the debounce."""

    config: Optional[str] = None
    isolated: bool = False
    select: Optional[tuple[str, ...]] = None
    ignore: Optional[tuple[str, ...]] = None
    extend_select: Optional[tuple[str, ...]] = None
    debounce: float = DEBOUNCE_S
    problems: list[str] = field(default_factory=list)


def _codes(name: str, value: Any, problems: list[str]) -> Optional[tuple[str, ...]]:
    if value is None:
        return None
    words = value if isinstance(value, (list, tuple)) else str(value).replace(" ", ",").split(",")
    codes = tuple(str(w).strip().upper() for w in words if str(w).strip())
    bad = [code for code in codes if not config.known_code(code)]
    for code in bad:
        problems.append(f"skiplint: setting {name}: {config.unknown_code(code)}")
    return None if bad else codes


def _flag(name: str, value: Any, problems: list[str]) -> bool:
    """A JSON boolean, or the string "true" or "false" (any case); anything else is a problem
    and counts as false."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    problems.append(f"skiplint: setting {name}: expected true or false, got {value!r}")
    return False


def read_settings(raw: Any, default_debounce: float) -> Settings:
    """Settings from initializationOptions or workspace/didChangeConfiguration: an object with the
    keys below, directly or under "skiplint". A bad value is one line in `problems` and ignored."""
    settings = Settings(debounce=default_debounce)
    if isinstance(raw, dict) and isinstance(raw.get("skiplint"), dict):
        raw = raw["skiplint"]
    if not isinstance(raw, dict):
        return settings
    problems = settings.problems
    value = raw.get("config")
    if isinstance(value, str) and value:
        settings.config = value
    elif value is not None:
        problems.append(f"skiplint: setting config: expected a path, got {value!r}")
    if raw.get("isolated") is not None:
        settings.isolated = _flag("isolated", raw["isolated"], problems)
    settings.select = _codes("select", raw.get("select"), problems)
    settings.ignore = _codes("ignore", raw.get("ignore"), problems)
    settings.extend_select = _codes("extendSelect", raw.get("extendSelect", raw.get("extend_select")), problems)
    value = raw.get("debounce")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 10_000:
        settings.debounce = value / 1000
    elif value is not None:
        problems.append(f"skiplint: setting debounce: expected milliseconds from 0 to 10000, got {value!r}")
    return settings


class Configuration:
    """The CLI's configuration finder, made again when a file it may have read changes. Used by
    the worker thread only."""

    def __init__(self, settings: Settings, root: str) -> None:
        self.settings = settings
        self.root = root
        explicit = settings.config
        if explicit is not None and not os.path.isabs(explicit):
            explicit = os.path.join(root, explicit)
        self.explicit = explicit
        self.finder = self._finder()
        self._seen: dict[str, tuple[Any, ...]] = {}

    def _finder(self) -> config.Finder:
        overrides = {"select": self.settings.select, "ignore": self.settings.ignore,
                     "extend_select": self.settings.extend_select}
        return config.Finder(explicit=self.explicit, isolated=self.settings.isolated, overrides=overrides)

    def _signature(self, directory: str) -> tuple[Any, ...]:
        """The size and mtime of every configuration file the finder may read for a directory."""
        if self.settings.isolated:
            return ()
        candidates = [self.explicit] if self.explicit is not None else []
        if not candidates:
            while True:
                candidates.extend(os.path.join(directory, name) for name, _ in config.CONFIG_FILES)
                parent = os.path.dirname(directory)
                if parent == directory:
                    break
                directory = parent
        out = []
        for path in candidates:
            try:
                info = os.stat(path)
            except OSError:
                continue
            out.append((path, info.st_size, info.st_mtime_ns))
        return tuple(out)

    def settings_for(self, path: str) -> tuple[Optional[config.Config], list[tuple[str, bool]]]:
        """The configuration of a file and the configuration problems met so far (one line each,
        as the CLI prints them); None when the file named in the `config` setting cannot be used
        (the CLI stops with exit status 2 before checking anything)."""
        directory = os.path.dirname(path)
        signature = self._signature(directory)
        if self._seen.get(directory, signature) != signature:
            self.finder = self._finder()
            self._seen.clear()
        self._seen[directory] = signature
        finder = self.finder
        settings = finder.for_file(path)
        problems = [(str(problem), problem.fatal) for problem in finder.problems]
        return (None if finder.unusable else settings), problems
