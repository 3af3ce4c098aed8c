"""Non-zero exits that answer a question: ``grep`` found nothing, ``diff`` found a
difference, ``test`` said no; and a linter's report of what it found in the code
(``pylint`` exits non-zero for any message, "Your code has been rated at 5.00/10").
They are not errors of the agent, so capture keeps them apart: counted, listed, never
shown by recall, no lesson, no job, no credit.

``EXITS`` is data: a program (as ``commands.program`` names it) and the exit codes
that answer. A quiet exit is benign only when nothing was printed to explain it; a
findings exit whatever the linter printed, unless it crashed (a traceback). In both the
program must be the one whose status the line returns. A user adds lines
``PROGRAM CODE[,CODE…]`` (quiet) or ``PROGRAM CODE[,CODE…] findings`` (``flake8 1
findings``, ``mypy 1 findings``) to ``benign-exits`` in the store directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reflect.capture import commands

FILE = "benign-exits"
FINDINGS = "findings"  # the word that marks a line of ``benign-exits`` as a linter's
_CRASH = "Traceback (most recent call last)"


@dataclass(frozen=True)
class Exits:
    """Program -> the exit codes that answer: ``quiet`` when nothing was printed,
    ``findings`` whatever a linter printed of the code it read."""

    quiet: dict[str, frozenset[int]]
    findings: dict[str, frozenset[int]] = field(default_factory=dict)


EXITS = Exits(
    quiet={name: frozenset({1})
           for name in ("grep", "egrep", "fgrep", "rg", "ag", "git grep", "diff", "cmp",
                        "git diff", "test", "[", "pgrep")},
    # pylint's status is bits: 2 error, 4 warning, 8 refactor, 16 convention messages
    # found; 1 (it crashed) and 32 (misused) are failures.
    findings={"pylint": frozenset(range(2, 32, 2))},
)


def rules(home: Path) -> Exits:
    """The built-in exits and the user's lines from ``home/benign-exits`` (a line that
    does not parse is skipped)."""
    quiet, findings = dict(EXITS.quiet), dict(EXITS.findings)
    path = home / FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return Exits(quiet, findings)
    for line in lines:
        words = line.split("#", 1)[0].split()
        table = quiet
        if words and words[-1] == FINDINGS:
            table, words = findings, words[:-1]
        if len(words) < 2:
            continue
        name = " ".join(words[:-1])
        try:
            parsed = frozenset(int(c) for c in words[-1].split(",") if c.strip())
        except ValueError:
            continue
        if parsed:
            table[name] = table.get(name, frozenset()) | parsed
    return Exits(quiet, findings)


def benign(action: str, exit_code: int | None, error_text: str | None, exits: Exits) -> str:
    """The program whose exit answered a question (``"grep"``), or "" for a failure.
    ``git diff`` answers only with ``--exit-code`` (or ``--quiet``)."""
    if exit_code is None:
        return ""
    words = commands.last_command(action)
    name = commands.program(words)
    text = error_text or ""
    if exit_code in exits.findings.get(name, ()) and _CRASH not in text:
        return name
    if text.strip():
        return ""
    if name == "git diff" and not {"--exit-code", "--quiet"} & set(words):
        return ""
    return name if exit_code in exits.quiet.get(name, ()) else ""
