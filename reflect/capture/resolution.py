"""What worked: a failure is got past by the next success of the same purpose (the same
program and target, or the same tests or script run another way: ``pytest x`` then
``python -m pytest x`` or ``bin/test x``; ``python repro.py`` then ``python3 repro.py``),
and its fix is what changed in between: the steps that did something (a step that merely
looked, an ``ls`` or a ``cat``, is no part of it), then that success. Commands are shown
whole, or shortened at word boundaries keeping their program and target."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable

from reflect.base import lazy
from reflect.capture import commands

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from reflect.base.records import FailureRow

SHOWN_STEPS = 3  # the latest changes a fix names; before them, how many more there were
STEP_CHARS = 60  # of a change, shortened at word boundaries
RERUN_CHARS = 80
ELIDED = "..."  # as a block shows it: NFKC makes "…" three dots, so the store keeps those
# What a run's fix is recorded as when review keeps it out: the failure is got past, and
# the steps are never shown or counted (``shown_fix``).
KEPT_OUT = "a fix kept out by review"
# Programs that run a project's tests: a run of one and a run of another on the same
# target serve one purpose.
TEST_RUNNERS = frozenset({"pytest", "py.test", "bin/test", "runtests.py", "tox", "nosetests",
                          "nose2", "unittest", "trial"})
TESTS = "tests"  # the purpose of every test runner's run
_TEST_PATH = lazy.compile(r"(?:\.py)?(?:::|$)")
_FILE = lazy.compile(r"[\w.~-]*[/.][\w./~-]*")  # a path, bare


def purpose(action: str) -> tuple[str, frozenset[str]]:
    """What the line's main command is for: the tests (of its targets, as dotted names),
    a script by its name, else its program and first argument; ("", ...) for none, and for
    a question to the program about itself (``pytest --version`` runs no test)."""
    words = commands.main_command(action)
    if not words or commands.asks(words):
        return "", frozenset()
    name, rest = commands.program_and_args(words)
    run = words[0].removeprefix("./")
    args = [w for w in rest if not w.startswith("-")]
    if name == "python":
        if "-c" in rest[:1] or not args:
            return "python -c", frozenset()
        run, args = args[0], args[1:]  # a script by its name: what it runs is its own
        name = run.rsplit("/", 1)[-1]
    if args[:1] == ["test"] and name in ("manage.py", "django-admin", "django", "sympy"):
        name, args = "unittest", args[1:]  # a framework's own test command
    if name in TEST_RUNNERS or run in TEST_RUNNERS or run.rsplit("/", 1)[-1] in TEST_RUNNERS:
        return TESTS, frozenset(_dotted(a) for a in args)
    return name, frozenset() if name.endswith((".py", ".sh")) else frozenset(args[:1])


def _dotted(target: str) -> str:
    """A test target as a dotted name: ``tests/a/test_b.py::T`` and ``a.test_b.T`` alike."""
    path, _, test = target.partition("::")
    dotted = _TEST_PATH.sub("", path).strip("/").replace("/", ".")
    dotted = dotted.removeprefix("tests.")
    return f"{dotted}.{test.replace('::', '.')}" if test else dotted


def same_purpose(failed_action: str, action: str) -> bool:
    """Whether ``action`` serves the purpose ``failed_action`` failed at: the same script or
    program and target, or tests of overlapping targets (none given: the whole suite)."""
    (kind, targets), (other, others) = purpose(failed_action), purpose(action)
    if not kind or kind != other:
        return False
    if kind != TESTS:
        return targets == others
    return not targets or not others or any(
        a == b or a.startswith(b + ".") or b.startswith(a + ".") for a in targets for b in others)


def shorten(action: str, limit: int) -> str:
    """``action`` as one line of at most about ``limit`` characters: heredoc bodies out,
    an interpreter by its name (``/usr/bin/python3`` as ``python3``);
    when longer, arguments dropped from its end (each run of them one ``...``, a quoted
    argument whole) but never its program, its target or its last word (an edit's file),
    and never a word cut in two (a target too long is shown by its last path parts)."""
    lines = [line.strip() for line in commands.without_heredocs(action).splitlines()
             if line.strip() and not line.strip().startswith("#")]
    text = " ; ".join(lines)
    first, _, rest = text.partition(" ")
    if first.startswith("/") and "/bin/" in first:
        text = f"{first.rsplit('/', 1)[-1]} {rest}".rstrip()
    if len(text) <= limit:
        return text
    words = _words(text)
    program, target = commands.key(action)
    named = [i for i, w in enumerate(words) if program and w.rsplit("/", 1)[-1] in program.split()]
    start = next((i for i, w in enumerate(words) if i in named), 0)
    keep = {*range(start - 2 if start >= 2 and words[start - 1] == "-m" else start, start + 1),
            *(i for i, w in enumerate(words) if target and w.strip("'\"") == target)}
    if _FILE.fullmatch(words[-1]):
        keep.add(len(words) - 1)  # an edit's file
    shown = list(words)
    for i in reversed(range(len(words))):
        if len(_joined(shown)) <= limit:
            return _joined(shown)
        if i not in keep:
            shown[i] = ELIDED
    return _joined([_tail(w, limit // 2) for w in shown])


def _words(text: str) -> list[str]:
    """The line's words, a quoted argument one word with its quotes."""
    try:
        return shlex.split(text, posix=False)
    except ValueError:  # an unbalanced quote: plain words
        return text.split()


def _tail(word: str, limit: int) -> str:
    """A word too long as its last path parts (``.../sql/query.py``), else as it is."""
    if len(word) <= limit or "/" not in word:
        return word
    parts = word.split("/")
    while len(parts) > 1 and len("/".join(parts)) + 2 > limit:
        parts = parts[1:]
    return f"{ELIDED}/{'/'.join(parts)}"


def _joined(words: list[str]) -> str:
    out: list[str] = []
    for word in words:
        if not (word == ELIDED and out and out[-1] == ELIDED):
            out.append(word)
    return " ".join(out)


def what_changed(failed_action: str, between: list[str], action: str) -> str:
    """One line: the steps that changed something between the failure and ``action``
    (each shortened, the latest ``SHOWN_STEPS`` of them, after how many more there were),
    then ``action``; or that a plain rerun passed."""
    rerun = shorten(action, RERUN_CHARS)
    changes: list[str] = []
    for step in between:
        if not commands.inspects(step) and (shown := shorten(step, STEP_CHARS)) not in changes[-1:]:
            changes.append(shown)
    if changes:
        more = len(changes) - SHOWN_STEPS
        named = "; ".join(f"`{c}`" for c in changes[-SHOWN_STEPS:])
        before = f"{more} more step{'s' if more > 1 else ''}, then " if more > 0 else ""
        return f"{before}{named}, then `{rerun}` passed"
    if failed_action.split() == action.split():  # not as shown: `/usr/bin/python3` is `python3`
        return f"`{rerun}` passed when rerun unchanged"
    return f"`{rerun}` passed"


def resolutions(open_failures: list[FailureRow], action: str,
                between: Callable[[int], list[str]],
                review: Callable[[str], str]) -> tuple[dict[str, str], set[str]]:
    """For the open failures whose purpose ``action`` served: failure id -> what worked,
    and why review kept each fix it refused out (``KEPT_OUT`` is recorded in its place).
    ``between(iteration)`` gives the steps that succeeded after that iteration;
    ``review(text)`` says why a fix must not be shown, "" when it may."""
    found, refused = {}, set()
    for f in open_failures:
        if same_purpose(f["action"], action):
            text = what_changed(f["action"], between(f["iteration"] or 0), action)
            if reason := review(text):
                text = f"{KEPT_OUT} (it {reason})"
                refused.add(reason)
            found[f["id"]] = text
    return found, refused


def counted_fixes(fixes: Iterable[tuple[str, str]], top: int) -> list[tuple[str, int]]:
    """``(run, fix)`` pairs, newest first, as the ``top`` fixes by how many runs each got
    past the mistake (a tie: the newest first); fixes review kept out are left out."""
    runs: dict[str, set[str]] = {}
    for run, fix in fixes:
        if shown_fix(fix):
            runs.setdefault(fix, set()).add(run)
    ranked = sorted(runs.items(), key=lambda kv: len(kv[1]), reverse=True)  # stable: newest
    return [(fix, len(by)) for fix, by in ranked[:top]]


def shown_fix(resolution: str) -> str:
    """A failure's recorded fix as it may be shown and counted: "" for one review kept out."""
    return "" if resolution.startswith(KEPT_OUT) else resolution
