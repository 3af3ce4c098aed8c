"""Find the real error in whatever an agent harness hands us.

`extract_text` reads raw output (a log tail, a traceback, test runner or
compiler output); `extract_exception` reads a live exception. Both return the
same record, so a failure captured either way gets the same fingerprint.

How the text is read: every line is offered to a set of recognisers (Python
tracebacks, pytest, Node, TypeScript, C/C++/Java/Rust/Go compilers, shell
errors). The last error reported wins, because later errors are the ones the
earlier output led to (chained exceptions, a test run after a build); the one
exception is a run of compiler errors, where the first is the cause and the
rest cascade. Only when nothing is recognised do we look for a line that
merely mentions an error, and then for the last meaningful line.

Inputs may be large and odd, so every pattern is anchored or built from disjoint
character classes, and matching stays linear in the input. Nothing is cut here: a message
is as long as its line, and the capture scrubs it before it cuts it to ``MAX_MESSAGE``
(a cut first could hide a secret from its pattern: a URL's ``@host``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from reflect.base import lazy

MAX_MESSAGE = 500  # what a capture keeps of a message, once scrubbed
MAX_FRAMES = 5
# A live exception's message is read as far as an error file's tail is (64 KB), to the
# last whole word: a part of a word could be a secret its pattern no longer finds.
_MAX_EXCEPTION = 64 * 1024
_PART_WORD = lazy.compile(r"\S+\Z")

_ANSI = lazy.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# Python: `  File "x.py", line 3, in f`; a SyntaxError location has no `in f`.
_PY_FRAME = lazy.compile(r'^\s+File "(?P<file>[^"]*)", line \d+(?:, in (?P<func>\S+))?')
_PY_EXC = lazy.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?:: ?(?P<msg>.*))?$")
# An exception line with no traceback around it (also Node's `TypeError: …`
# and LeetCode-style judges' `Line 6: NameError: …`). A bare `Warning:` is a
# tool's notice, not a failure, so only Error and Exception may stand alone.
_NAMED_EXC = lazy.compile(
    r"^(?:Line \d+: )?(?P<type>(?:[A-Za-z_][\w.]*)?(?:Error|Exception)"
    r"|[A-Za-z_][\w.]*(?:Warning|Exit|Interrupt))"
    r"(?:: ?(?P<msg>.*))?$"
)
_NODE_FRAME = lazy.compile(
    r"^\s+at (?:async )?(?:(?P<func>[^()]+?) \()?(?P<file>[^()\s]+?):\d+:\d+\)?(?: \{)?$"
)

_PYTEST_SUMMARY = lazy.compile(r"^=+ short test summary info =+$")
_PYTEST_ENTRY = lazy.compile(r"^(?:FAILED|ERROR) (?P<node>\S+)(?: - (?P<msg>.*))?$")
_PYTEST_E = lazy.compile(r"^E(?:\s{2,}|\s*$)")
# `path:12: in func` between entries, `path:12: TypeError` after the last one.
_PYTEST_LOCATION = lazy.compile(
    r"^(?P<file>[^\s:][^:]*):\d+:(?: in (?P<func>\S+)| (?P<type>[\w.]+))?$"
)
_PYTEST_SECTION = lazy.compile(r"^_{3,} .* _{3,}$|^The above exception|^During handling")
_DEF = lazy.compile(r"^[>\s]*(?:async\s+)?def (\w+)\(")

_TS = lazy.compile(r"\berror (?P<code>TS\d+): (?P<msg>.*)$")
_ERROR_PREFIX = lazy.compile(r"^(?:error|fatal)(?:\[(?P<code>E\d+)\])?: (?P<msg>.*)$", re.I)
_UNITTEST_HEADER = lazy.compile(r"^ERROR: \w+ \([\w.]+\)$")  # `ERROR: test_x (mod.Case)`
_RUST_ARROW = lazy.compile(r"^\s*--> ")
_RUST_SUMMARY = lazy.compile(r"^(?:aborting due to|could not compile)")
_CC = lazy.compile(r"^(?P<file>[^\s:][^:]*):\d+:(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_JAVA_SYMBOL = lazy.compile(r"^\s*symbol:\s*(?P<sym>.*)$")
_GO = lazy.compile(r"^(?P<file>[^\s:][^:]*\.go):\d+:\d+: (?P<msg>.*)$")

_SH_NOT_FOUND = lazy.compile(
    r"^(?:\S*/)?\w*sh: (?:line \d+: |\d+: )?(?P<cmd>[^\s:]+): (?:command )?not found$"
)
_ZSH_NOT_FOUND = lazy.compile(r"^(?:\S*/)?\w*sh: command not found: (?P<cmd>\S+)$")
# what `reflect run` prints for a program that is not there, as a shell without its name
_BARE_NOT_FOUND = lazy.compile(r"^(?P<cmd>[^\s:]+): command not found$")
_PY_NO_MODULE = lazy.compile(r"^\S*python[\d.]*: No module named (?P<mod>\S+)$")

_WEAK = lazy.compile(r"\b(?:error|errors|fatal|failed|failure|exception)\b", re.I)
_TESTS_FAILED = lazy.compile(r"\b\d+ failed\b")
_PROGRESS = lazy.compile(r"\d{1,3}(?:\.\d+)?%|[#=█▉▊▋▌▍▎▏]{4,}")
_PROMPT = lazy.compile(r"^\S*[$#>]$")
_WORDY = lazy.compile(r"[^\W_]")


@dataclass(frozen=True)
class Extracted:
    error_type: str
    message: str
    frames: tuple[str, ...] = ()
    signature: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "frames", tuple(self.frames))
        object.__setattr__(self, "signature", " > ".join(self.frames))


def extract_text(text: str) -> Extracted | None:
    """The real error in raw output, or None when it holds nothing usable."""
    if not text or not text.strip():
        return None
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    strong: dict[int, tuple[Extracted, bool]] = {}
    for index, found in _python_tracebacks(lines):
        strong.setdefault(index, (found, False))
    summary_only = None
    if test_run := _pytest(lines):
        index, found, has_block = test_run
        if has_block:
            strong.setdefault(index, (found, False))
        else:
            summary_only = found
    for index in range(len(lines)):
        if index not in strong and (hit := _line_error(lines, index)):
            strong[index] = hit
    if strong:
        return _pick(strong)
    return summary_only or _weak(lines) or _last_meaningful(lines)


def extract_exception(exc: BaseException) -> Extracted:
    """The same record from a live exception (its own traceback, not its chain)."""
    import traceback  # here: the CLI never reads a live exception, and a hook spares ~3 ms

    stack = traceback.extract_tb(exc.__traceback__)
    frames = tuple(f"{_basename(f.filename)}:{f.name}" for f in stack)
    if isinstance(exc, SyntaxError):
        message = exc.msg or ""
    else:
        try:
            message = str(exc).strip().split("\n", 1)[0]
        except Exception:  # a broken __str__ must not break capture
            message = ""
        if len(message) > _MAX_EXCEPTION:
            message = _PART_WORD.sub("", message[:_MAX_EXCEPTION + 1])
    if not message and stack:
        message = (stack[-1].line or "").strip()
    return _make(type(exc).__name__, message, frames)


def _make(error_type: str, message: str, frames: Sequence[str] = ()) -> Extracted:
    # Keep the last dotted component (`django.db.utils.OperationalError` ->
    # `OperationalError`): the same error raised through another import path,
    # or printed by another tool, must get the same identity.
    kind = error_type.strip().rsplit(".", 1)[-1] or "Error"
    return Extracted(kind, message.strip(), tuple(frames)[-MAX_FRAMES:])


def is_warning(error_type: str) -> bool:
    """``DeprecationWarning``, ``RemovedInDjango40Warning``: a notice, unless raised."""
    return error_type.endswith("Warning")


def _basename(path: str) -> str:
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1] or path


def _python_tracebacks(lines: list[str]) -> Iterator[tuple[int, Extracted]]:  # noqa: C901 - one state machine over the lines
    """Yield (index, Extracted) for each exception line that ends a traceback."""
    frames: list[str] = []
    code = ""  # the source line under the innermost call frame
    awaiting_code = inside = False
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            frames, code, inside = [], "", True
        elif m := _PY_FRAME.match(line):
            inside = True
            awaiting_code = bool(m["func"])  # a SyntaxError location is no call frame
            if awaiting_code:
                frames.append(f"{_basename(m['file'])}:{m['func']}")
                code = ""
        elif not inside:
            continue
        elif not line:
            frames, code, inside = [], "", False
        elif line[0].isspace():  # source, carets, "[Previous line repeated …]"
            if awaiting_code and line.strip("^~ "):
                code, awaiting_code = line.strip(), False
        else:
            if m := _PY_EXC.match(line):
                message = m["msg"] or ""
                if not message.strip() and m["msg"] is not None and i + 1 < len(lines):
                    message = lines[i + 1]  # "AssertionError: " then the message below
                yield i, _make(m["type"], message.strip() or code, frames)
            frames, code, inside = [], "", False


def _pytest(lines: list[str]) -> tuple[int, Extracted, bool] | None:
    """The last pytest failure: (index, record, whether `E` lines described it)."""
    summary = next((i for i, line in enumerate(lines) if _PYTEST_SUMMARY.match(line)), None)
    entries = []
    if summary is not None:
        entries = [i for i in range(summary + 1, len(lines)) if _PYTEST_ENTRY.match(lines[i])]
    stop = summary if summary is not None else len(lines)
    end = next((i for i in range(stop - 1, -1, -1) if _PYTEST_E.match(lines[i])), None)
    if end is not None:
        start = end
        while start > 0 and _PYTEST_E.match(lines[start - 1]):
            start -= 1
        error_type, message, location = _pytest_block(lines, start, end)
        frames = _pytest_frames(lines, start, location)
        return (entries[-1] if entries else end), _make(error_type, message, frames), True
    if not entries:
        return None
    m = _PYTEST_ENTRY.match(lines[entries[-1]])
    assert m is not None  # entries are the lines it matched
    node, message = m["node"], (m["msg"] or "").removesuffix("...").strip()
    path, _, rest = node.partition("::")
    frame = f"{_basename(path)}:{rest.rsplit('::', 1)[-1].split('[')[0] or '<module>'}"
    if exc := _NAMED_EXC.match(message):
        return entries[-1], _make(exc["type"], exc["msg"] or "", [frame]), False
    error_type = "AssertionError" if message.startswith("assert") else "TestFailure"
    return entries[-1], _make(error_type, message or node, [frame]), False


def _pytest_block(lines: list[str], start: int, end: int) -> tuple[str, str, int]:
    """Type and message of an `E` block, and the index of the location after it."""
    location, located_type = end, ""
    for k in range(end + 1, min(end + 4, len(lines))):
        if m := _PYTEST_LOCATION.match(lines[k]):
            location, located_type = k, m["type"] or ""
            break
    texts = [lines[k][1:].strip() for k in range(start, end + 1)]
    for k, text in enumerate(texts):
        if m := _NAMED_EXC.match(text):
            below = next((t for t in texts[k + 1 :] if t), "")
            return m["type"], (m["msg"] or "").strip() or below, location
    first = next((text for text in texts if text), "")
    if located_type and first.startswith(located_type + ":"):
        first = first[len(located_type) + 1 :]
    if located_type:
        return located_type, first, location
    return ("AssertionError" if first.startswith("assert") else "TestFailure"), first, location


def _pytest_frames(lines: list[str], start: int, location: int) -> list[str]:
    """Call frames of the failure section around an `E` block, innermost last."""
    section = next((k for k in range(start - 1, -1, -1) if _PYTEST_SECTION.match(lines[k])), -1)
    frames, previous = [], section
    for k in range(section + 1, location + 1):
        if not (m := _PYTEST_LOCATION.match(lines[k])):
            continue
        # Long tracebacks name the function only in the source shown above.
        func = m["func"] or next(
            (d[1] for j in range(k - 1, previous, -1) if (d := _DEF.match(lines[j]))), ""
        )
        if func:
            frames.append(f"{_basename(m['file'])}:{func}")
        previous = k
    return frames


def _line_error(lines: list[str], i: int) -> tuple[Extracted, bool] | None:  # noqa: C901 - recognisers in order, the first match wins
    """A recognised error on line i: (record, whether it is a compiler error)."""
    line = lines[i]
    if m := _TS.search(line):
        return _make(m["code"], m["msg"]), True
    if m := _NAMED_EXC.match(line):
        return _make(m["type"], m["msg"] or "", _node_frames(lines, i)), False
    if m := _ERROR_PREFIX.match(line):
        if _RUST_SUMMARY.match(m["msg"]) or _UNITTEST_HEADER.match(line):
            return None  # a summary, or the heading of the traceback below it
        near = lines[i + 1 : i + 3]
        if m["code"] or any(_RUST_ARROW.match(n) for n in near):
            return _make(m["code"] or "CompileError", m["msg"]), True
        return _make("Error", m["msg"]), False
    if m := _CC.match(line):
        message = m["msg"]
        for after in lines[i + 1 : i + 4]:
            if s := _JAVA_SYMBOL.match(after):  # javac names the symbol below
                message = f"{message}: {s['sym']}"
                break
        return _make("CompileError", message), True
    if m := _GO.match(line):
        return _make("CompileError", m["msg"]), True
    if m := _PY_NO_MODULE.match(line):
        module = m["mod"].strip("'")
        return _make("ModuleNotFoundError", f"No module named '{module}'"), False
    if m := (_SH_NOT_FOUND.match(line) or _ZSH_NOT_FOUND.match(line)
             or _BARE_NOT_FOUND.match(line)):
        # One message for bash, sh and zsh: the same missing command.
        return _make("CommandNotFound", f"{m['cmd']}: command not found"), False
    if "No such file or directory" in line:
        return _make("FileNotFound", line), False
    if "Permission denied" in line:
        return _make("PermissionDenied", line), False
    return None


def _node_frames(lines: list[str], i: int) -> list[str]:
    """Node's `at fn (file:1:2)` lines below an error ("Require stack:" etc. skipped)."""
    frames: list[str] = []
    for k in range(i + 1, min(i + 60, len(lines))):
        if m := _NODE_FRAME.match(lines[k]):
            frames.append(f"{_basename(m['file'])}:{m['func'] or '<anonymous>'}")
        elif frames or not lines[k] or k > i + 10:
            break
    return frames[:MAX_FRAMES][::-1]  # Node prints innermost first


def _pick(strong: dict[int, tuple[Extracted, bool]]) -> Extracted:
    # A warning stands for the failure only when no error does: tests that turn warnings
    # into errors fail on them, but a run that also raised an error failed on that.
    errors = {i: hit for i, hit in strong.items() if not is_warning(hit[0].error_type)}
    strong = errors or strong
    indexes = sorted(strong)
    k = len(indexes) - 1
    while k > 0 and strong[indexes[k]][1] and strong[indexes[k - 1]][1]:
        k -= 1  # in a run of compiler errors the first is the cause
    return strong[indexes[k]][0]


def _weak(lines: list[str]) -> Extracted | None:
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip().strip("=-!*_ ")
        if line and _WEAK.search(line):
            if line.endswith(":") and i + 1 < len(lines) and lines[i + 1].strip():
                line = f"{line} {lines[i + 1].strip()}"  # "Sphinx error:" + reason
            return _make("TestFailure" if _TESTS_FAILED.search(line) else "Error", line)
    return None


def _last_meaningful(lines: list[str]) -> Extracted | None:
    for line in reversed(lines):
        text = line.strip().strip("=-!*_ ")  # pytest-style banners keep their text
        if not _WORDY.search(text) or _PROMPT.match(text) or _PROGRESS.search(text):
            continue
        return _make("Error", text)
    return None
