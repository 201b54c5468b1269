"""The cheap front of every check: whether a file can use the skip API, decided without libcst.

A file is analysed only when an import line names an API module (or a module of an active
api-alias), or when it says `Sequential` and imports, from its own project, names that may be
skippable classes; that second test is the project walk of skiplint.projectscan, imported only
for files that say `Sequential`. Nothing here imports libcst, and loading this module (which every
run and every flake8 process does) builds no more than the import table: a run over files that
do not use the API costs little more than reading them. The import table of the API (`API`) and
the api-aliases in force live here too, because the prefilter's needles and the analysis' names
must agree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from skiplint import sources

if TYPE_CHECKING:
    from skiplint.diagnostics import FileResult
    from skiplint.rules import Selection
    from skiplint.projectscan import ProjectScan

#: The five module roots that carry the skip API (spec/skip-api.md).
SKIP_ROOTS = (
    "torchgpipe.skip",
    "fairscale.nn.pipe.skip",
    "torch.distributed.pipeline.sync.skip",
    "torch.distributed.pipeline.sync._skip",
    "torch.distributed._pipeline.sync.skip",
)

#: Modules removed from PyTorch in 2.4 (SKP401): an import of any of these or below them.
REMOVED_MODULES = ("torch.distributed.pipeline", "torch.distributed._pipeline")


def _api_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for root in SKIP_ROOTS:
        for sym in ("skippable", "stash", "pop", "Namespace", "verify_skippables",
                    "inspect_skip_layout", "Skippable"):
            table[f"{root}.{sym}"] = sym
        for sym in ("skippable", "stash", "pop", "verify_skippables", "Skippable"):
            table[f"{root}.skippable.{sym}"] = sym
        table[f"{root}.namespace.Namespace"] = "Namespace"
        table[f"{root}.layout.inspect_skip_layout"] = "inspect_skip_layout"
    # Early torchgpipe releases (and its own tests) spell these `torchgpipe.skip.analysis.*`.
    for sym in ("verify_skippables", "inspect_skip_layout"):
        table[f"torchgpipe.skip.analysis.{sym}"] = sym
    for qual in ("torchgpipe.GPipe", "torchgpipe.gpipe.GPipe"):
        table[qual] = "GPipe"
    for qual in ("fairscale.nn.Pipe", "fairscale.nn.pipe.Pipe", "fairscale.nn.pipe.pipe.Pipe"):
        table[qual] = "FairscalePipe"
    for root in ("torch.distributed.pipeline.sync", "torch.distributed._pipeline.sync"):
        table[f"{root}.Pipe"] = "TorchPipe"
        table[f"{root}.pipe.Pipe"] = "TorchPipe"
    for sym in ("balance_by_time", "balance_by_size"):
        table[f"torchgpipe.balance.{sym}"] = sym
        table[f"fairscale.nn.pipe.balance.{sym}"] = sym
    for qual in ("fairscale.nn.pipe.MultiProcessPipe", "fairscale.nn.MultiProcessPipe",
                 "fairscale.nn.pipe.multiprocess_pipe.MultiProcessPipe"):
        table[qual] = "MultiProcessPipe"
    for qual in ("fairscale.nn.pipe.AsyncPipe", "fairscale.nn.pipe.async_pipe.AsyncPipe"):
        table[qual] = "AsyncPipe"
    for qual in ("fairscale.nn.pipe.LazyModule", "fairscale.nn.pipe.types.LazyModule"):
        table[qual] = "LazyModule"
    for qual in ("torch.nn.Sequential", "torch.nn.modules.Sequential",
                 "torch.nn.modules.container.Sequential"):
        table[qual] = "Sequential"
    for qual in ("collections.OrderedDict", "typing.OrderedDict"):
        table[qual] = "OrderedDict"
    return table


class LazyPattern:
    """A regular expression compiled on first use, so that importing the prefilter (which every
    run and every flake8 process does) costs next to nothing."""

    __slots__ = ("_source", "_compiled")

    def __init__(self, source: Union[str, bytes]) -> None:
        self._source = source
        self._compiled: Optional[re.Pattern[Any]] = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self._source)
        return getattr(self._compiled, name)


#: Qualified name -> API symbol. api-aliases add rows for the duration of a file (`using_aliases`).
API: dict[str, str] = _api_table()

#: The common spelling of what a file must name for it to be parsed at all: an API module
#: (torchgpipe, fairscale, or torch.distributed.pipeline / _pipeline in any spelling, never torch's
#: newer `pipelining`) on a line that begins with the import. Nothing resolves to the API without
#: an import (a project's own re-exports are api-aliases, with needles of their own), so a
#: mention in a comment or docstring is no hit. Lines end where Python's tokenizer ends them: at
#: \n, \r\n or a lone \r. Other import forms are read by the import reader (`mentions_api`).
_PREFILTER_PATTERN = (r"(?m)(?:^|(?<=\r))[ \t]*(?:from|import)[ \t][^\r\n]*?"
                      r"(?:torchgpipe|fairscale|distributed\._?pipeline(?!ing)|distributed import \(?\s*_?pipeline\b)")
_PREFILTER = LazyPattern(_PREFILTER_PATTERN.encode())
_PREFILTER_TEXT = LazyPattern(_PREFILTER_PATTERN)
#: Plain substrings for the same purpose, for tools that want needles (any hit of the pattern
#: contains one of these).
PREFILTER_NEEDLES = (b"torchgpipe", b"fairscale", b"pipeline")
#: The prefilter's own, narrower test: a text that can import the API names one of the packages,
#: or says both words of the removed torch modules (`pipeline` alone is a common word: 67 files of
#: torch's own sources say it).
_PACKAGE_NEEDLES = (b"torchgpipe", b"fairscale")
_TORCH_NEEDLES = (b"pipeline", b"distributed")
_PACKAGE_NEEDLES_TEXT = tuple(needle.decode() for needle in _PACKAGE_NEEDLES)
_TORCH_NEEDLES_TEXT = tuple(needle.decode() for needle in _TORCH_NEEDLES)

#: Needles and (alias, API name) pairs of the api-aliases in force (see `using_aliases`).
_ALIAS_NEEDLES: list[bytes] = []
_ALIASES: list[tuple[str, str]] = []

AliasKey = tuple[tuple[str, str], ...]


def prefilter_needles() -> tuple[bytes, ...]:
    """Substrings one of which any file that mentions the API contains (aliases included)."""
    return PREFILTER_NEEDLES + tuple(_ALIAS_NEEDLES)


def mentions_api(data: Union[bytes, str]) -> bool:
    """Does the file import an API module (or a module of an active api-alias) in a way the
    analysis can resolve? A file without a needle cannot; an import line that begins with the
    import (nearly every file that can) is found by the pattern; any other text with a needle is
    read by the import reader (skiplint.projectscan.imports_api), so no import form is missed."""
    readable = _readable(data)
    if readable is None:
        return True  # the caller's decode says why it cannot be checked
    data = readable
    if isinstance(data, str):
        aliases: Iterable[Any] = (needle.decode() for needle in _ALIAS_NEEDLES)
        packages: Iterable[Any] = _PACKAGE_NEEDLES_TEXT
        words: Iterable[Any] = _TORCH_NEEDLES_TEXT
        pattern = _PREFILTER_TEXT
    else:
        aliases, packages, words, pattern = _ALIAS_NEEDLES, _PACKAGE_NEEDLES, _TORCH_NEEDLES, _PREFILTER
    if any(needle in data for needle in aliases):
        return True
    # Every hit of the pattern, and every import the reader can resolve to the API (torch's
    # removed modules included, however spelled), names a package or says both torch words;
    # `in` is many times faster than the pattern.
    if not any(needle in data for needle in packages) and not all(word in data for word in words):
        return False
    if pattern.search(data) is not None:
        return True
    from skiplint import projectscan

    return projectscan.imports_api(data)


def _readable(data: Union[bytes, str]) -> Optional[Union[bytes, str]]:
    """What the prefilter looks in: the bytes of UTF-8 source (the API's needles are ASCII, which
    UTF-8 keeps as is), else the text (`# coding: utf-7` spells `t` as `+AHQ-`, UTF-16 puts NULs
    between letters): the text that the path, standard input and flake8 all analyse. None for
    source that cannot be decoded (wanted: its reader reports why)."""
    if isinstance(data, str) or sources.utf8(data):
        return data
    try:
        return sources.decode(data)
    except sources.SourceError:
        return None


def framework_name(qualified: str) -> bool:
    """Whether an imported qualified name is torch's own (`torch.nn.Linear`): the composition
    analysis takes such names as the framework's, never as a class of the checked project (torch's
    own sources included), so neither it nor the prefilter's project walk follows them."""
    return qualified == "torch" or qualified.startswith("torch.")


def active_aliases() -> bool:
    """Whether api-aliases are in force for this file (they widen what may define the API)."""
    return bool(_ALIAS_NEEDLES)


def alias_key() -> AliasKey:
    """The api-aliases in force, as a value: what every cached answer about the API depends on."""
    return tuple(sorted(set(_ALIASES)))


def alias_entries(alias: str, target: str) -> Optional[dict[str, str]]:
    """Import-table rows that make `alias` mean `target` (a symbol or a whole module of the API).

    None when `target` is not part of the API.
    """
    if target in API:
        return {alias: API[target]}
    prefix = target + "."
    rows = {alias + qual[len(target):]: symbol for qual, symbol in API.items() if qual.startswith(prefix)}
    return rows or None


class using_aliases:
    """Extend the import table with a project's re-exports of the API for the duration of a block.

    `aliases` maps a project's qualified name to an API qualified name, e.g.
    `mypkg.layers.skippable` -> `torchgpipe.skip.skippable`. Names the table already knows win,
    so an alias never changes what a real API import means.
    """

    def __init__(self, aliases: Iterable[tuple[str, str]]) -> None:
        self._pairs = list(aliases)
        self._rows: dict[str, str] = {}
        self._needles: list[bytes] = []
        for alias, target in self._pairs:
            for qual, symbol in (alias_entries(alias, target) or {}).items():
                if qual not in API:
                    self._rows[qual] = symbol
            needle = alias.split(".", 1)[0].encode()
            if needle not in self._needles:
                self._needles.append(needle)

    def __enter__(self) -> "using_aliases":
        API.update(self._rows)
        _ALIAS_NEEDLES.extend(self._needles)
        _ALIASES.extend(self._pairs)
        return self

    def __exit__(self, *exc: object) -> None:
        for qual in self._rows:
            API.pop(qual, None)
        for needle in self._needles:
            _ALIAS_NEEDLES.remove(needle)
        for pair in self._pairs:
            _ALIASES.remove(pair)


def wanted(data: Union[bytes, str], path: str, scan: Optional[ProjectScan] = None) -> bool:
    """The whole prefilter: the file names an API module, or it composes (says `Sequential`)
    names it imports from its own project that may be skippable classes."""
    readable = _readable(data)
    if readable is None or mentions_api(readable):
        return True
    data = readable
    word: Union[bytes, str] = b"Sequential" if isinstance(data, bytes) else "Sequential"
    if word not in data:  # type: ignore[operator]
        return False
    if scan is None:
        from skiplint import projectscan

        scan = projectscan.SCAN
    return scan.imports_project_skippables(path, data)


def triage(path: str, selection: Selection, scan: Optional[ProjectScan] = None) -> Union[FileResult, str]:
    """Read one file: its verdict when it needs no analysis (clean, or unreadable: SKP900), else
    its decoded text for the analysis.

    One policy for what cannot be analysed: a file that cannot be read at all is SKP900 (whether
    it uses the API cannot be told); a file whose bytes name no API module is not decoded or
    parsed, so nothing is reported about it, whatever it holds (a syntax error, NUL bytes, bytes
    that are not text: Python and flake8's E902/E999 report those); a file that names the API and
    cannot be decoded or parsed is SKP900.
    """
    try:
        data = sources.read_bytes(path)
    except sources.SourceError as error:
        return unchecked(path, str(error))
    return judge(data, path, scan)


def judge(data: bytes, path: str, scan: Optional[ProjectScan] = None) -> Union[FileResult, str]:
    """As triage, for the bytes of a file already read (or of standard input)."""
    from skiplint.diagnostics import FileResult

    try:
        if not wanted(data, path, scan):
            return FileResult(path, ())
        return sources.decode(data)
    except sources.SourceError as error:
        return unchecked(path, str(error))


def unchecked(path: str, reason: str, line: int = 1, col: int = 0) -> FileResult:
    """A file that could not be checked: SKP900 with the reason, whatever is selected (silence would
    read as clean); a syntax error where the running Python's compile puts it."""
    from skiplint.diagnostics import FileResult
    from skiplint.rules.analyzer import UNCHECKED_FILE

    return FileResult(path, (UNCHECKED_FILE.diagnostic(path, line, col, reason=reason),), reason)
