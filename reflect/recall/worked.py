"""What this project's runs did about a mistake: the fix that got most of them past it,
counted over the runs that hit it, and whether the mistake is a run's own work (a test or
reproduction red on the code under repair until the fix) rather than one to avoid.

A house rule speaks at its family's level when its failures are of several causes: a fix is
then told with each run's subject masked (``pip install <name>``), never one cause's values.
A fix that edited the code under work in place (``sed -i '14d' lib/base.py`` after a run
broke that line) is never told: its words are one run's file and lines, which no other run
can follow, however many runs the same programs got past their mistake.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reflect.base import lazy
from reflect.capture import commands
from reflect.capture.fingerprint import family_template, unsuggested
from reflect.capture.resolution import TESTS, purpose, shown_fix

SUBJECT = "<name>"  # a masked subject in a family's fix or hint
MIN_RUNS = 2  # a fix is told when it worked in at least this many runs
WORK_SHARE = 0.5  # a family whose failures are this much the runs' work is no house rule
# A test or reproduction asserting what the code under repair does not do yet.
ASSERTIONS = frozenset({"AssertionError", "Failed"})
# Errors of a step gone wrong, not of the code under repair: a fix of them is no progress.
SLIPS = frozenset({"SyntaxError", "IndentationError", "TabError", "FileNotFound",
                   "CommandNotFound", "ModuleNotFoundError", "ImportError", "PermissionDenied"})
# The programs of a step that edits files and does nothing else.
EDITORS = frozenset({"sed", "perl", "patch", "git apply", "git checkout", "git restore", "Edit",
                     "MultiEdit", "Write", "NotebookEdit", "cat", "tee", "printf", "echo"})
# The programs of a step that changes a file already there (a file written whole may be one
# the run makes, its own script or module).
IN_PLACE = frozenset({"sed", "perl", "patch", "git apply", "git checkout", "git restore", "Edit",
                      "MultiEdit", "NotebookEdit"})
# The programs of a step that installs: a fix with one changed the environment.
INSTALLERS = frozenset({"pip", "pip3", "conda", "apt-get", "apt", "npm", "yarn", "uv", "poetry"})
_STEP = lazy.compile(r"`([^`]+)`")
_MASKS = lazy.compile(r"<x>|<n>|<path>|<str>")
Record = Mapping[str, Any]  # a failure's run, cause, error, action and resolution


@dataclass(frozen=True)
class Worked:
    text: str  # the fix as a rule tells it
    source: str  # the failure whose fix's words are told: the item's provenance
    runs: int  # runs it got past the mistake in
    hit: int  # runs that hit the mistake
    members: int = 0  # members of the runs it got past the mistake in


def what_worked(failures: Iterable[Record], family_level: bool,
                members: int = 0) -> Worked | None:
    """The fix that got the most runs of ``failures`` past their mistake (fixes alike by
    the programs they ran), told by its latest run's words, masked at a family's level;
    None when no fix worked in ``MIN_RUNS`` runs. A fix that edited the code under work in
    place is none (``edits_code``). In a scope of several members, the fix
    must have worked in runs of ``members`` of them, and so must the words it is told by
    (runs of no member count for none): one member's runs neither make a fix nor word it."""
    hit: set[str] = set()
    runs: Counter[frozenset[str]] = Counter()
    counted: set[tuple[str, frozenset[str]]] = set()
    # each fix's words, newest first, with the members of the runs they worked in
    words: dict[frozenset[str], dict[str, tuple[str, set[str]]]] = {}
    for f in failures:  # newest first
        hit.add(f["run"])
        fix = shown_fix(f["resolution"] or "")
        if not fix or edits_code(f):
            continue
        text = masked(fix, f["message"]) if family_level else fix
        if family_level and _runs_subject(text):
            continue  # `python -m <name> tests/x.py` passed: one cause's own, no family's fix
        programs = frozenset(commands.kind(step) for step in _STEP.findall(fix))
        said = words.setdefault(programs, {}).setdefault(text, (f["id"], set()))
        said[1].add(f.get("member") or "")
        if (f["run"], programs) not in counted:
            counted.add((f["run"], programs))
            runs[programs] += 1
    found = []
    for programs, n in runs.items():  # a tie: the first counted, the newest
        by = set().union(*(m for _, m in words[programs].values())) - {""}
        told_by = [(text, source) for text, (source, m) in words[programs].items()
                   if len(m - {""}) >= members]
        if n >= MIN_RUNS and len(by) >= members and told_by:
            found.append(Worked(*told_by[0], n, len(hit), len(by)))
    return max(found, key=lambda w: w.runs, default=None)


def _runs_subject(fix: str) -> bool:
    """Whether a family's masked ``fix`` is only a run of the masked subject itself (the
    module a ``No module named`` cause named, run as ``python -m pytest``): nothing changed
    that another cause of the family could do."""
    steps = _STEP.findall(fix)
    return len(steps) == 1 and commands.kind(steps[0]) == SUBJECT


def rewrote_its_script(fix: str) -> bool:
    """Whether ``fix`` only rewrote the script it then ran (`cat <<'EOF' > repro.py`, then
    `python repro.py` passed): what changed is the script's body, which is never shown."""
    steps = _STEP.findall(fix)
    script = commands.kind(steps[-1]) if steps else ""  # a heredoc's step aside
    *changes, _rerun = [c for step in steps for c in commands.simple_commands(step)] or [[]]
    return bool(changes) and script.endswith(".py") and all(
        c[0] in EDITORS and c[-1].endswith(script) for c in changes)


def told(fix: str, limit: int) -> str:
    """A fix within ``limit`` characters: its earliest steps left out (``...`` says so),
    never its last change or the step that got past the mistake, never a command cut."""
    steps = _STEP.findall(fix)
    if len(fix) <= limit or len(steps) < 3 or not fix.endswith(" passed"):
        return fix
    *changes, rerun = steps
    while len(changes) > 1:
        changes = changes[1:]
        shorter = f"...; {'; '.join(f'`{c}`' for c in changes)}, then `{rerun}` passed"
        if len(shorter) <= limit:
            return shorter
    return f"...; `{changes[-1]}`, then `{rerun}` passed"


@functools.lru_cache(maxsize=1024)  # every recall masks the same family's fixes and hints
def masked(text: str, message: str) -> str:
    """``text`` with the subjects of ``message`` (what its family masks) as ``SUBJECT``."""
    for subject in subjects(message):
        # never a step's program (`pytest --version` stays what it ran), but a name
        # quoted whole (a hint's `lst`)
        name = re.escape(subject)
        text = re.sub(rf"(?<![\w.`-]){name}(?![\w-])|(?<=`){name}(?=`)", SUBJECT, text)
    return text


def subjects(message: str) -> list[str]:
    """What ``message`` names that its family's template masks (``yaml`` of ``No module
    named 'yaml'``, ``nei`` of ``name 'nei' is not defined. Did you mean: 'ne'?``), longest
    first; none when the template cannot be laid over it."""
    template = family_template(message)
    message = " ".join(unsuggested(message).split())
    pattern = "".join("(.+?)" if _MASKS.fullmatch(part) else re.escape(part)
                      for part in re.split(r"(<x>|<n>|<path>|<str>)", template))
    found = re.fullmatch(pattern, message, re.S)
    if found is None:
        return []
    names = {g.strip("'\"") for g in found.groups()}
    # a name, not an operator a suggestion quotes ('==' of "Maybe you meant '=='")
    return sorted((n for n in names if len(n) > 1 and not n.isdigit() and re.search(r"[^\W\d]", n)),
                  key=len, reverse=True)


def is_work(failure: Record) -> bool:
    """Whether ``failure`` is its run's progress: a test or reproduction asserting what the
    code under repair does not do yet, or a failure its run got past by editing a file
    other than the one it ran, installing nothing (not a slip: a typo, a missing file,
    program or module)."""
    kind, _ = purpose(failure["action"])
    if failure["error_type"] in ASSERTIONS and kind not in ("", "python -c"):
        return True
    fix = shown_fix(failure["resolution"] or "")
    if not fix or failure["error_type"] in SLIPS:
        return False
    *changes, _rerun = _STEP.findall(fix)
    if any(commands.kind(step) in INSTALLERS for step in changes):
        return False  # what the install changed, not the edit, may have got it past
    return _edits(failure["action"], changes, EDITORS)


def edits_code(failure: Record) -> bool:
    """Whether ``failure``'s fix edited the code under work in place: a file already there,
    other than the one its failed command ran (``sed -i``, a patch, a checkout)."""
    *changes, _rerun = _STEP.findall(shown_fix(failure["resolution"] or "")) or [""]
    return _edits(failure["action"], changes, IN_PLACE)


def _edits(action: str, changes: Sequence[str], programs: frozenset[str]) -> bool:
    """Whether a step of ``changes`` edits a file other than the one ``action`` ran (a test
    runner's run: any file) by one of ``programs``."""
    kind, _ = purpose(action)
    script = kind if kind != TESTS else ""
    return any(commands.kind(step) in programs and not commands.inspects(step)
               and not (script and step.endswith(script)) for step in changes)


def mostly_work(failures: Sequence[Record]) -> bool:
    """Whether a family's failures are at least ``WORK_SHARE`` its runs' own work."""
    return bool(failures) and sum(map(is_work, failures)) >= WORK_SHARE * len(failures)
