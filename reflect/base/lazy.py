"""Regular expressions compiled on first use, not at import.

A hook starts a process per tool call, and Python compiles a pattern in pure Python:
the scrubber's, the extractor's and the heuristic rules' cost a cold process ~30 ms
at import, most of it for patterns that process never runs (a ``PreToolUse`` hook
runs none; a capture tries the heuristic rules only up to the first that matches).
``compile`` returns a stand-in that compiles on its first use and from then on hands
out the compiled pattern's own methods.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import Any


class _Pattern:
    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None
        _made.append(self)

    def __getattr__(self, name: str) -> Any:
        # Called only for names the instance does not hold yet: each is kept once found,
        # so a later ``.search`` costs what the compiled pattern's own does.
        if self._compiled is None:
            self._compiled = re.compile(*self._source)
        value = getattr(self._compiled, name)
        setattr(self, name, value)
        return value


_made: list[_Pattern] = []


def compile_all() -> None:
    """Compile every pattern made so far: for the resident helper, whose children each
    start from its state (``reflect.cli.resident``)."""
    for pattern in _made:
        pattern.search  # noqa: B018 (looked up, it is compiled)


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    return _Pattern(pattern, flags)  # type: ignore[return-value]  # it stands in for one
