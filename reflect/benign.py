"""Non-zero exits that answer a question: ``grep`` found nothing, ``diff`` found a
difference, ``test`` said no. They are not errors, so capture keeps them apart:
counted, listed, never shown by recall, no lesson, no job, no credit.

``EXITS`` is data: a program (as ``commands.program`` names it) and the exit codes
that answer. A user adds lines ``PROGRAM CODE[,CODE…]`` to ``benign-exits`` in the
store directory. An exit is benign only when nothing was printed to explain it and
the program is the one whose status the line returns.
"""

from __future__ import annotations

from pathlib import Path

from reflect import commands

FILE = "benign-exits"

EXITS: dict[str, frozenset[int]] = {
    name: frozenset({1})
    for name in ("grep", "egrep", "fgrep", "rg", "ag", "git grep", "diff", "cmp", "git diff",
                 "test", "[", "pgrep")
}


def rules(home: Path) -> dict[str, frozenset[int]]:
    """The built-in exits and the user's lines from ``home/benign-exits`` (a line that
    does not parse is skipped)."""
    table = dict(EXITS)
    path = home / FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return table
    for line in lines:
        name, _, codes = line.split("#", 1)[0].strip().rpartition(" ")
        try:
            parsed = frozenset(int(c) for c in codes.split(",") if c.strip())
        except ValueError:
            continue
        if name.strip() and parsed:
            table[name.strip()] = table.get(name.strip(), frozenset()) | parsed
    return table


def benign(action: str, exit_code: int | None, error_text: str | None,
           table: dict[str, frozenset[int]]) -> str:
    """The program whose exit answered a question (``"grep"``), or "" for a failure.
    ``git diff`` answers only with ``--exit-code`` (or ``--quiet``)."""
    if exit_code is None or (error_text or "").strip():
        return ""
    words = commands.last_command(action)
    name = commands.program(words)
    if name == "git diff" and not {"--exit-code", "--quiet"} & set(words):
        return ""
    return name if exit_code in table.get(name, ()) else ""
