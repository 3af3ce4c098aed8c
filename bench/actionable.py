"""Whether the house rules say what to do, and whether what they say is what the runs did:
the product as it is, read through its own replay.

Run: .venv/bin/python bench/actionable.py [DATA_DIR] [--quick] [--scope-by-project]
(about 6 minutes; --quick, a quarter of mini-swe-agent-dev's runs and all of DebugBench,
about 2; --scope-by-project, each repository its own scope as the product gives a
project by default: no lesson crosses repositories, and the counting baseline counts
the same repository's earlier runs)

mini-swe-agent-dev and DebugBench from the shared data are replayed in task order through
``reflect.eval._replay.replay`` (mode ``on``, no embeddings, the product's defaults), and
read from what it wrote (each iteration's block, items with their text and provenance),
fold by fold over repositories (``reflect.eval._matched.fold_groups``: SWE-bench's
repository, DebugBench's kind of bug) and pooled:

1. **says what to do**: of the house rules shown (a rule counted once per run shown it),
   the share whose item has a ``What worked`` or a ``Hint:`` line every time the run was
   shown it. Target: at least 0.9.
2. **the work**: the share of those rules that are the runs' own work, judged by a
   classifier of this file over each failure's own run (it shares nothing with the
   product's ``worked.is_work``): a test or reproduction red on the code under repair
   until an edit of the code under work made it green, or an assertion failure of a test
   or reproduction (``the_work``). A rule is judged by the failure its item shows and, as
   a second reading, by most of the failures it stands for (its provenance). Target: at
   most 0.02. A failure whose step names no command (DebugBench's) cannot be judged.
3. **fix agreement**: for every cross-run repeat (by the evaluation's signature) that a
   house rule shown earlier in the run or in the block before it covered and whose item
   names a fix (``What worked``): whether a program the fix names (any of its commands:
   ``python -m X`` as X, a script by its name, commands that only look never) is among the
   programs of the run's next five successful commands that do more than look. Beside it
   the counting baseline on the same repeats: the program this project's earlier runs most
   often ran successfully right after the same failure (counted over earlier runs only, in
   replay order; ties to the latest), naming one program and as many as the rule names;
   and the failed command's own program (a run reruns what failed: what agreement at the
   level of programs gets for nothing). The baseline's key (the same signature, else the
   same group; the signature only; the group only) is the one threshold-like choice here:
   for each fold it is the key that agreed most on the other folds' repeats (pooled: each
   fold with its own). Target: the rule at least the baseline naming as many.
4. **coverage**: the house rules' cross-run coverage and precision against the best
   popularity list with as many items, by signature and by group, in the block before the
   step and anywhere earlier in the run (``reflect.eval._matched``, judged as
   bench/house_rules.py judges it). Target: held on every fold and pooled.

Nothing of the product is tuned here: the replay runs with its defaults.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from figures import DATA, emit, no_data
from house_rules import SETS, holds, readings

from reflect import Memory
from reflect.api.memory import port
from reflect.capture import commands
from reflect.eval._compare import verdict
from reflect.eval._convert import convert
from reflect.eval._matched import FOLDS, fold_groups
from reflect.eval._replay import ITERATIONS_FILE, replay
from reflect.eval._trace import TraceRecord

QUICK_EVERY = 4  # --quick: every 4th run of mini-swe-agent-dev
TRUTH_WINDOW = 5  # the run's next successful commands that do more than look (issue 39)
TARGET_SAYS = 0.9
TARGET_WORK = 0.02
# Whether a format's actions are shell commands (DebugBench's are the model's explanation)
SHELL = {"mini-swe-agent": True, "debugbench": False}

# -- commands as a shell reads them (the classifier's and agreement's own reading) ---------

_CONT = re.compile(r"\\\n")
_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_PYTHON = re.compile(r"^python(?:\d(?:\.\d+)?)?$")
_PY_OPT_ARG = {"-W", "-X", "-Q"}  # python options that take a value
_WRAPPERS = {"sudo", "env", "timeout", "time", "nice", "command", "exec", "xargs", "stdbuf"}
_WRAPPER_ARG = re.compile(r"^(?:-\S*|\d[\d.]*[smhd]?)$")
_PRELUDE = {"cd", "pushd", "popd", "set", "true", "sleep", ":", "source", "."}
_ENV = {"export", "unset"}
LOOK = {"ls", "cat", "nl", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag",
        "find", "pwd", "wc", "awk", "which", "file", "stat", "tree", "diff", "cmp", "sort",
        "uniq", "cut", "printf", "echo", "type", "whoami", "env", "tr", "xxd", "od", "column",
        "date", "du", "df", "realpath", "dirname", "basename", "sed"}
_WRITERS = {"cat", "echo", "printf", "tee"}  # they write a file only by a redirect or heredoc
_INSTALL = {("pip", "install"), ("pip3", "install"), ("conda", "install"),
            ("apt-get", "install"), ("apt", "install"), ("npm", "install"), ("yarn", "add"),
            ("pip", "uninstall"), ("uv", "pip"), ("poetry", "add")}
_SETUP = {"install", "develop", "build_ext"}
_EDIT_PROGRAMS = {"mv", "cp", "rm", "mkdir", "touch", "patch", "tee", "truncate", "chmod", "ln",
                  "perl", "ed", "ex", "git apply", "git checkout", "git restore", "git stash",
                  "git reset", "git am", "dos2unix", "rmdir", "unzip", "tar"}
TEST_RUNNERS = {"pytest", "py.test", "bin/test", "runtests.py", "tox", "nosetests", "nose2",
                "unittest", "django test", "manage.py test", "django-admin test", "trial",
                "sympy test", "test"}
_VALUED = {"-k", "-m", "-W", "-o", "-p", "-c", "-n", "-r", "--tb", "--settings", "--parallel",
           "-v", "--verbosity", "--durations", "--rootdir", "-C", "-j", "-b", "-d", "-D", "-e"}
_OPS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"}
_REDIRS = {">", ">>", "<", ">&", "<&", "&>", "&>>", ">|", "<<", "<<<", "<>"}
_WRITE_REDIRS = {">", ">>", "&>", "&>>", ">|"}


@dataclass
class Cmd:
    words: list[str]  # the simple command's words, wrappers and assignments removed
    program: str  # python -m X as X, a script by its name, git X as "git X"
    args: list[str]
    kind: str  # look | prelude | env | install | edit | run
    writes: list[str] = field(default_factory=list)  # files it writes
    assigns: list[str] = field(default_factory=list)  # VAR=... set for it
    heredoc: bool = False


def script(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _python(words: list[str]) -> tuple[str, list[str]]:
    rest = words[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest = rest[2:] if rest[0] in _PY_OPT_ARG else rest[1:]
    if not rest:
        return "python", []
    if rest[0] == "-m" and len(rest) > 1:
        if rest[1] in ("django", "sympy") and rest[2:3] == ["test"]:
            return f"{rest[1]} test", rest[3:]
        return rest[1], rest[2:]
    if rest[0] == "-c":
        return "python -c", rest[1:]
    return script(rest[0]), rest[1:]


def program_of(words: list[str]) -> tuple[str, list[str]]:
    """The program as agreement names it and its arguments: ``python -m X`` is X, ``python
    x.py`` and ``bash x.sh`` a script by its name, ``bin/test`` as it was run."""
    if not words:
        return "", []
    name = script(words[0]) if words[0].startswith("/") else words[0]
    if _PYTHON.match(script(name)):
        return _python(words)
    if name in ("bash", "sh") and len(words) > 1 and not words[1].startswith("-"):
        return script(words[1]), words[2:]
    if name == "git" and len(words) > 1:
        return f"git {words[1]}", words[2:]
    if name.endswith(("manage.py", "django-admin")) and words[1:2] == ["test"]:
        return "manage.py test", words[2:]
    name = name.removeprefix("./")
    if "/" in name and not name.endswith(".py"):
        return name, words[1:]
    return (script(name) if name.endswith((".py", ".sh")) else name), words[1:]


def _installs(program: str, args: list[str]) -> bool:
    first = next((a for a in args if not a.startswith("-")), "")
    return ((program, first) in _INSTALL or (program.endswith("setup.py") and first in _SETUP))


def _kind(program: str, args: list[str], redirects: list[str]) -> tuple[str, list[str]]:
    """What a simple command does, and the files it writes."""
    if program in _PRELUDE:
        return "prelude", []
    if program in _ENV:
        return "env", []
    if _installs(program, args):
        return "install", []
    files = [a for a in args if not a.startswith("-")][-1:]
    if program in ("sed", "perl"):
        in_place = any(a.startswith(("-i", "--in-place")) or (
            program == "perl" and a.startswith("-") and "i" in a[1:3]) for a in args)
        if in_place:
            return "edit", files
        return ("edit" if redirects else "look"), redirects
    if program in _EDIT_PROGRAMS or program.startswith(
            ("git checkout", "git apply", "git restore", "git stash", "git reset")):
        return "edit", files
    if redirects and (program in LOOK or program == "python -c"):
        return "edit", list(redirects)  # a script's output to a file is its log, not an edit
    if program == "find" and any(a in ("-delete", "-exec", "-execdir") for a in args):
        return "edit", []
    if program in LOOK or program.startswith("git "):
        return "look", []
    return "run", []


def _tokens(text: str) -> list[str]:
    """Shell words and operators, quotes resolved; a newline is a ``;`` (a quoted one is
    not); unbalanced quotes fall back to plain splitting."""
    out: list[str] = []
    chunk: list[str] = []
    for line in text.split("\n"):
        chunk.append(line)
        try:
            lex = shlex.shlex("\n".join(chunk), posix=True, punctuation_chars=True)
            lex.whitespace_split = True
            out += [*lex, ";"]
            chunk = []
        except ValueError:
            continue
    if chunk:
        out += " ".join(chunk).split()
    return out


def parse(action: str) -> list[Cmd]:
    """The simple commands of an action in order, heredoc bodies out."""
    text = _CONT.sub(" ", commands.without_heredocs(action or ""))
    out, part = [], []
    for tok in [*_tokens(text), ";"]:
        if tok not in _OPS:
            part.append(tok)
            continue
        if part and (cmd := _command(part)) is not None:
            out.append(cmd)
        part = []
    return out


def _unwrapped(words: list[str]) -> tuple[list[str], list[str]]:
    assigns = []
    while words and (_ASSIGN.match(words[0]) or words[0] in _WRAPPERS):
        if _ASSIGN.match(words[0]):
            assigns.append(words[0])
        words = words[1:]
        while words and _WRAPPER_ARG.match(words[0]):
            words = words[1:]
    return words, assigns


def _command(part: list[str]) -> Cmd | None:
    words: list[str] = []
    redirects: list[str] = []
    heredoc, k = False, 0
    while k < len(part):
        tok = part[k]
        if tok not in _REDIRS:
            words.append(tok)
            k += 1
            continue
        arg = part[k + 1] if k + 1 < len(part) else ""
        heredoc |= tok == "<<"
        if tok in _WRITE_REDIRS and arg and arg != "/dev/null":
            redirects.append(arg)
        if words and words[-1].isdigit():
            words.pop()  # the 2 of 2>&1
        k += 2
    if words and words[0].startswith("#"):
        return None
    words, assigns = _unwrapped(words)
    if not words:
        return Cmd([], "", [], "env", assigns=assigns) if assigns else None
    program, args = program_of(words)
    kind, writes = _kind(program, args, redirects)
    if heredoc and program in ("cat", "tee") and not writes:
        kind, writes = "edit", [a for a in args if not a.startswith("-")][-1:]
    return Cmd(words, program, args, kind, writes, assigns, heredoc)


def step_programs(action: str) -> list[str]:
    """The programs of a command that count for agreement: none that only looks (every
    ``git`` command among them), sets the environment or writes by a redirect."""
    return [c.program for c in parse(action)
            if c.kind not in ("look", "prelude", "env") and c.program
            and not c.program.startswith("git") and c.program not in _WRITERS]


def main_program(action: str) -> str:
    """The program a successful step ran ("" for a look): its main run, else its first."""
    programs = step_programs(action)
    own = purpose(action).program
    return own if own in programs else (programs[0] if programs else "")


# -- a failure's purpose and its fix, from the run's own trace -----------------------------

@dataclass(frozen=True)
class Purpose:
    cls: str  # "test" for any test runner, else the program (a script by its name)
    targets: tuple[str, ...]
    program: str

    def same(self, other: Purpose) -> bool:
        if not self.cls or self.cls != other.cls:
            return False
        if self.cls in ("test", "python -c"):
            mine, theirs = set(self.targets), set(other.targets)
            if not mine or not theirs:
                return mine == theirs
            return any(a == b or a.startswith(b + ".") or b.startswith(a + ".")
                       for a in mine for b in theirs)
        return self.targets[:1] == other.targets[:1]


def _dotted(target: str) -> str:
    t = target.strip("'\"").removeprefix("./").split("[", 1)[0]
    t = re.sub(r"\.py(?=\.|$)", "", t.replace("::", ".").replace("/", "."))
    for prefix in ("tests.", "testbed."):
        t = t.removeprefix(prefix)
    return t.strip(".")


def _positional(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a.startswith("-"):
            skip = a in _VALUED and "=" not in a
        else:
            out.append(a)
    return out


def purpose(action: str) -> Purpose:
    """What an action is for: its main run (the last that installs or runs, else the last
    that does more than look), a test runner of any kind as ``test`` with its targets."""
    cmds = [c for c in parse(action) if c.kind not in ("prelude", "env")]
    runs = [c for c in cmds if c.kind in ("run", "install")]
    found = (runs or [c for c in cmds if c.kind != "look"] or cmds)
    if not found:
        return Purpose("", (), "")
    prog, positional = found[-1].program, _positional(found[-1].args)
    if prog in TEST_RUNNERS or prog.endswith("runtests.py"):
        return Purpose("test", tuple(sorted(_dotted(a) for a in positional
                                            if not a.isdigit())), prog)
    if prog == "python -c":
        return Purpose(prog, (" ".join(found[-1].args)[:60],), prog)
    target = next((a for a in positional if "/" in a or "." in a or "::" in a),
                  positional[0] if positional else "")
    return Purpose(prog, (prog if prog.endswith((".py", ".sh")) else target,), prog)


@dataclass
class Fix:
    failure: int  # the failed step's position in its run
    success: int  # the step that got past it
    steps: list[str]  # what changed, in order
    kinds: set[str]  # install / edit / env / run (a helper script that wrote files) /
    #                  another way / unchanged
    writes: list[str]


_WRITER = re.compile(r"open\([^)]*['\"][wa]\+?['\"]|\.write_text\(|\.write\(|shutil\."
                     r"|os\.(?:remove|rename)|fileinput|sed -i", re.S)
_HEREDOC_BODY = re.compile(r"(?:cat|tee)\s*(?:>\s*(\S+)\s*)?<<-?\s*['\"]?(\w+)['\"]?\s*"
                           r"(?:>\s*(\S+))?[^\n]*\n(.*?)\n\2\s*$", re.S | re.M)


def heredoc_files(action: str) -> dict[str, str]:
    """Files an action writes with a heredoc: name -> body."""
    return {script(name.strip("'\"")): m[4] for m in _HEREDOC_BODY.finditer(action or "")
            if (name := m[1] or m[3])}


def _shown(word: str) -> str:
    return word if re.fullmatch(r"[\w@%+=:,./*\-\[\]~^{}$]+", word) else shlex.quote(word)


def _text(c: Cmd) -> str:
    shown = " ".join(_shown(w) for w in [*c.assigns, *c.words])
    shown += "".join(f" > {_shown(w)}" for w in c.writes if c.program in _WRITERS)
    return shown + (" <<EOF" if c.heredoc else "")


def changes_in(action: str, scripts: dict[str, str]) -> tuple[list[str], set[str], list[str]]:
    """The commands of a successful step that changed something: installs, edits, the
    environment, and runs of a helper script whose body writes files."""
    steps, kinds, writes = [], set(), []
    for c in parse(action):
        helper = c.kind == "run" and bool(_WRITER.search(scripts.get(c.program, "")))
        if c.kind in ("install", "edit", "env") or helper:
            steps.append(_text(c) or " ".join(c.assigns))
            kinds.add("run" if helper else c.kind)
            writes += c.writes
    return steps, kinds, writes


def main_text(action: str) -> str:
    """The action's main run with the environment it set."""
    parsed = parse(action)
    cmds = [c for c in parsed if c.kind in ("run", "install")] or [
        c for c in parsed if c.kind not in ("prelude", "env", "look")] or [
        c for c in parsed if c.kind != "prelude"]
    env = [a for c in parsed if c.kind == "env" for a in (c.assigns or c.words[1:])]
    if not cmds:
        return " ".join(action.split())
    return " ".join(_shown(w) for w in [*env, *cmds[-1].assigns, *cmds[-1].words])


@dataclass
class Step:
    row: int  # the replay's row
    action: str
    ok: bool | None  # None: a benign exit, neither failure nor success
    signature: str | None
    group: str | None
    items: list[dict[str, Any]]  # the block before it
    failure_id: str | None = None

    @property
    def error_type(self) -> str:
        return (self.signature or "").split(":", 1)[0]


def fixes(steps: Sequence[Step]) -> dict[int, Fix]:
    """Each failure its run got past: the next step of the same purpose that did not fail
    the same way (a success, or another error), and what changed since the last step that
    did."""
    purposes = [purpose(s.action) for s in steps]
    bodies: list[dict[str, str]] = []
    scripts: dict[str, str] = {}
    for s in steps:
        scripts = {**scripts, **heredoc_files(s.action)}
        bodies.append(scripts)
    out: dict[int, Fix] = {}
    for i, s in enumerate(steps):
        if s.ok is not False or not purposes[i].cls:
            continue
        last = i
        for j in range(i + 1, len(steps)):
            if steps[j].ok is None or not purposes[i].same(purposes[j]):
                continue
            if steps[j].ok is False and steps[j].signature == s.signature:
                last = j
                continue
            out[i] = _fix(steps, bodies, i, last, j)
            break
    return out


def _fix(steps: Sequence[Step], bodies: list[dict[str, str]], i: int, last: int, j: int) -> Fix:
    between: list[str] = []
    kinds: set[str] = set()
    writes: list[str] = []
    for k in range(last + 1, j):
        if steps[k].ok is True:
            s, kk, w = changes_in(steps[k].action, bodies[k])
            between, kinds, writes = between + s, kinds | kk, writes + w
    # what the passing line changed before its run, not done the same by the failed line
    main = main_text(steps[j].action)
    own, own_kinds, own_writes = changes_in(steps[j].action, bodies[j])
    before, _, _ = changes_in(steps[last].action, bodies[last])
    new_bodies = {f for f, body in heredoc_files(steps[j].action).items()
                  if heredoc_files(steps[last].action).get(f) != body}
    own = [c for c in own if c != main and (c not in before or any(f in c for f in new_bodies))]
    if own:
        kinds, writes = kinds | own_kinds, writes + own_writes
    fix_steps = between + own
    if not fix_steps:
        if main == main_text(steps[last].action):
            kinds.add("unchanged")
        else:
            fix_steps = [main]
            kinds.add("another way")
    return Fix(i, j, fix_steps, kinds, writes)


# -- "the work": the classifier --------------------------------------------------------------

SYNTAX = {"SyntaxError", "IndentationError", "TabError"}  # its own edit broke the code
SLIPS = {"FileNotFound", "CommandNotFound", "ModuleNotFoundError", "PermissionDenied"}
ASSERTIONS = {"AssertionError", "Failed", "TestFailure"}  # a test asserting what is not yet
SCRATCH = (".bak", ".orig", ".tmp", ".txt", ".log", ".out", ".pyc")
FILE_MANAGEMENT = {"mv", "cp", "rm", "mkdir", "touch", "chmod", "ln", "rmdir", "truncate", "tar",
                   "unzip"}


def _path(p: str) -> str:
    p = p.strip("'\"")
    for prefix in ("/testbed/", "./"):
        p = p.removeprefix(prefix)
    return p


def created_before(steps: Sequence[Step], upto: int) -> set[str]:
    """Paths the run made itself before ``upto``: first met as a write target (a heredoc or
    redirect, mkdir/touch/cp/mv), never read or edited in place before."""
    made: set[str] = set()
    existing: set[str] = set()
    for s in steps[:upto]:
        for c in parse(s.action):
            paths = {_path(x) for x in c.args if not x.startswith("-")}
            if c.program in _WRITERS and c.writes:
                made |= {_path(w) for w in c.writes} - existing
            elif c.program in ("mkdir", "touch", "cp", "mv"):
                made |= {_path(x) for x in c.args[-1:] if not x.startswith("-")} - existing
            else:
                existing |= paths - made
    return made


def code_under_work(fix: Fix, steps: Sequence[Step]) -> list[str]:
    """Files whose content the fix changed (not by moving, removing or making them) that
    the run did not make itself, other than the script that failed."""
    own = purpose(steps[fix.failure].action).program
    own = own if own.endswith((".py", ".sh")) else ""
    made = created_before(steps, fix.success + 1)
    written = [_path(w) for st in fix.steps for c in parse(st)
               if c.kind == "edit" and c.program not in FILE_MANAGEMENT for w in c.writes]
    return [w for w in written
            if script(w) != own and w not in made and not w.endswith(SCRATCH)]


def why_not_work(steps: Sequence[Step], i: int, fix: Fix | None) -> str:
    """"" when the failure at ``i`` is its run's work, else why not."""
    step, kind = steps[i], purpose(steps[i].action).cls
    if step.error_type in ASSERTIONS and kind not in ("", "pip", "conda"):
        return ""  # a test or reproduction asserting what the code does not do yet
    if fix is None:
        return "not got past" if kind else "no command"
    if fix.kinds & {"install", "env"}:
        return "install or environment"
    if "another way" in fix.kinds:
        return "run another way"
    if "unchanged" in fix.kinds or not fix.kinds & {"edit", "run"}:
        return "nothing changed"
    if step.error_type in SYNTAX:
        return "its own edit broke the code"
    if step.error_type in SLIPS:
        return "a slip"
    if not code_under_work(fix, steps) and "run" not in fix.kinds:
        return "only its own scripts changed"
    return ""


def the_work(steps: Sequence[Step]) -> dict[int, str]:
    """Each failure of a run's steps (by position): "" when it is the work, else why not."""
    found = fixes(steps)
    return {i: why_not_work(steps, i, found.get(i)) for i, s in enumerate(steps)
            if s.ok is False}


# -- the replay, as the product wrote it -------------------------------------------------------

def runs_of(records: Sequence[TraceRecord], rows: Sequence[dict[str, Any]],
            benign: set[str]) -> dict[str, list[Step]]:
    """Each run's steps in replay order, from the records and the replay's rows."""
    out: dict[str, list[Step]] = defaultdict(list)
    for record, row in zip(records, rows, strict=True):
        ok = True if row["success"] else (None if row["failure_id"] in benign else False)
        out[row["run"]].append(Step(row["index"], record.action, ok, row["signature"],
                                    row["group"], row["items"], row["failure_id"]))
    return dict(out)


def projects_of(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Each run's project, as ``reflect.eval._matched`` names it (the trace's, else the
    run's name before its first ``/``)."""
    return {row["run"]: str(row.get("project") or row["run"].split("/", 1)[0])
            for row in reversed(rows)}


def folds_of(rows: Sequence[dict[str, Any]], folds: int = FOLDS) -> dict[str, int]:
    """Each run's fold, as ``reflect.eval._matched`` makes them (repositories, largest
    first, each to the fold with the fewest runs)."""
    by_run: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_run[row["run"]].append(index)
    names = fold_groups(rows, by_run, folds)
    fold = {name: n for n, group in enumerate(names) for name in group}
    return {run: fold[project] for run, project in projects_of(rows).items()}


def house_rules(step: Step) -> list[dict[str, Any]]:
    return [i for i in step.items if i.get("section") != "recent"]


_WHAT_WORKED = re.compile(r"What worked[^:\n]*:(.*)")
_HINT = re.compile(r"^\s*Hint:", re.M)
_CODE = re.compile(r"`([^`]+)`")
_MASK = re.compile(r"<\w+>")


def says_what_to_do(text: str) -> bool:
    return bool(_WHAT_WORKED.search(text) or _HINT.search(text))


def named_programs(text: str) -> list[str]:
    """The programs the item's What worked names (its masked subjects read as a name)."""
    found = _WHAT_WORKED.search(text)
    if not found:
        return []
    programs = [p for cmd in _CODE.findall(found[1])
                for p in step_programs(_MASK.sub("_subject_", cmd))]
    return list(dict.fromkeys(programs))


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, other: Tally) -> None:
        self.counts.update(other.counts)
        for name, texts in other.examples.items():
            self.examples[name] += texts


def rules_shown(steps: Sequence[Step], work: dict[str, str], tally: Tally) -> None:
    """Figures 1 and 2 for one run: each house rule it was shown, once."""
    texts: dict[str, list[str]] = defaultdict(list)
    provenance: dict[str, list[str]] = {}
    for step in steps:
        for item in house_rules(step):
            texts[item["id"]].append(item["text"])
            provenance.setdefault(item["id"], list(item["source_failure_ids"]))
    c = tally.counts
    for rule, shown in texts.items():
        c["rules"] += 1
        says = all(map(says_what_to_do, shown))
        c["says"] += says
        if not says:
            tally.examples["says nothing"].append(shown[0])
        judged = [work[f] for f in provenance[rule] if f in work and work[f] != "no command"]
        first = provenance[rule][0] if provenance[rule] else ""
        c["judged"] += first in work and work[first] != "no command"
        c["work_shown"] += work.get(first) == ""
        most = 2 * sum(w == "" for w in judged) > len(judged) > 0
        c["work_most"] += most
        if work.get(first) == "" or most:
            tally.examples["the work"].append(shown[0])


# -- fix agreement -------------------------------------------------------------------------------

KEYS = {"signature, else group": ("s", "g"), "signature": ("s",), "group": ("g",)}


@dataclass
class Repeat:
    fold: int
    truth: set[str]  # the programs of the run's next five successful commands
    own: str  # the failed command's program
    covered: bool
    named: list[str]  # the programs the covering rule's What worked names
    baseline: dict[str, list[str]]  # the earlier runs' next programs, ranked, by key
    text: str = ""


def _truth(steps: Sequence[Step], i: int) -> set[str]:
    out: set[str] = set()
    seen = 0
    for t in steps[i + 1:]:
        if t.ok is True and (programs := step_programs(t.action)):
            out |= set(programs)
            seen += 1
            if seen == TRUTH_WINDOW:
                break
    return out


def _next_program(steps: Sequence[Step], i: int) -> str:
    return next((p for t in steps[i + 1:] if t.ok is True and (p := main_program(t.action))), "")


def _ranked(evidence: list[tuple[str, str, int]]) -> list[str]:
    """Programs by the runs that ran them next, ties to the latest."""
    runs: dict[str, set[str]] = defaultdict(set)
    last: dict[str, int] = {}
    for run, program, seq in evidence:
        if program:
            runs[program].add(run)
            last[program] = max(last.get(program, -1), seq)
    return sorted(runs, key=lambda p: (len(runs[p]), last[p], p), reverse=True)


# (scope, key, the key's value) -> (run, the program it ran next, its row), for each failure
Evidence = dict[tuple[str, str, str | None], list[tuple[str, str, int]]]


def repeats(runs: dict[str, list[Step]], fold: dict[str, int],
            scope: dict[str, str] | None = None) -> list[Repeat]:
    """Every cross-run repeat by signature (a signature an earlier run failed with, first
    in its run), with what the rules and the earlier runs said about it, in replay order;
    ``scope``: each run's scope, whose earlier runs alone the baseline counts (None: one
    scope for all)."""
    evidence: Evidence = defaultdict(list)
    out: list[Repeat] = []
    for run, steps in runs.items():
        where = scope[run] if scope else ""
        own: set[str] = set()
        shown: dict[str, str] = {}  # signature -> the latest rule text covering it
        for i, step in enumerate(steps):
            for item in house_rules(step):
                shown.update(dict.fromkeys(item.get("signatures", ()), item["text"]))
            sig = step.signature
            if step.ok is not False or sig is None or sig in own:
                continue
            own.add(sig)
            if not evidence[(where, "s", sig)]:
                continue
            text = shown.get(sig, "")
            out.append(Repeat(fold[run], _truth(steps, i), purpose(step.action).program,
                              bool(text), named_programs(text), {
                                  name: _baseline(evidence, keys, step, where)
                                  for name, keys in KEYS.items()}, text))
        for i, step in enumerate(steps):
            if step.ok is False and step.signature is not None:
                after = _next_program(steps, i)
                for key in (("s", step.signature), ("g", step.group)):
                    evidence[(where, *key)].append((run, after, step.row))
    return out


def _baseline(evidence: Evidence, keys: tuple[str, ...], step: Step, where: str) -> list[str]:
    for key in keys:
        found = evidence.get((where, key, step.signature if key == "s" else step.group))
        if found:
            return _ranked(found)
    return []


def choose_keys(found: Sequence[Repeat], folds: int) -> list[str]:
    """For each fold, the baseline key that agreed most on the other folds' repeats (a
    tie: the first of ``KEYS``)."""
    def agreed(name: str, held_out: int) -> int:
        return sum(bool(set(r.baseline[name][:1]) & r.truth) for r in found
                   if r.fold != held_out)
    return [max(KEYS, key=lambda name: agreed(name, k)) for k in range(folds)]


def agreement(found: Iterable[Repeat], key: str) -> Counter[str]:
    c: Counter[str] = Counter()
    for r in found:
        base = r.baseline[key]
        c["repeats"] += 1
        c["base_all"] += bool(set(base[:1]) & r.truth)
        c["covered"] += r.covered
        if not r.named:
            continue
        c["named"] += 1
        c["rule"] += bool(set(r.named) & r.truth)
        c["base"] += bool(set(base[:1]) & r.truth)
        c["base_k"] += bool(set(base[:len(r.named)]) & r.truth)
        c["self"] += r.own in r.truth
    return c


# -- the bench -------------------------------------------------------------------------------

def measure(records: Sequence[TraceRecord], rows: Sequence[dict[str, Any]], benign: set[str],
            folds: int = FOLDS, shell: bool = True, by_project: bool = False) -> dict[str, Any]:
    """Figures 1-3 from a replay's records and rows (``benign``: the failure ids the store
    kept as benign exits), fold by fold and pooled. ``shell``: whether the trace's
    actions are commands (DebugBench's are the model's words about its fix: no program is
    named there, and agreement is not measured). ``by_project``: the baseline counts
    each run's project's earlier runs alone, as a replay scoped by project does."""
    runs = runs_of(records, rows, benign)
    fold = folds_of(rows, folds)
    n = max(fold.values(), default=-1) + 1
    tallies = [Tally() for _ in range(n)]
    work = {steps[i].failure_id or "": why for steps in runs.values()
            for i, why in the_work(steps).items()} if shell else {}  # each over its own run
    for run, steps in runs.items():
        rules_shown(steps, work, tallies[fold[run]])
    # scoped as the replay scopes them: a run of no project in the one global scope
    scope = {row["run"]: str(row.get("project") or "") for row in rows} if by_project else None
    found = repeats(runs, fold, scope) if shell else []
    chosen = choose_keys(found, n)
    per_fold = [{"rules": dict(t.counts), "key": chosen[k],
                 "agreement": dict(agreement((r for r in found if r.fold == k), chosen[k]))}
                for k, t in enumerate(tallies)]
    pooled, agree = Tally(), Counter[str]()
    for t, f in zip(tallies, per_fold, strict=True):
        pooled.add(t)
        agree.update(f["agreement"])
    examples = {name: first_of_each(texts)[:3] for name, texts in pooled.examples.items()}
    named = [r for r in found if r.named]
    agreed_examples = [(r.text, r.named, sorted(r.truth)) for r in (
        [r for r in named if set(r.named) & r.truth][:2]
        + [r for r in named if not set(r.named) & r.truth][:2])]
    return {"folds": per_fold, "pooled": {"rules": dict(pooled.counts),
                                          "agreement": dict(agree)},
            "examples": examples, "agreement_examples": agreed_examples}


def first_of_each(texts: Iterable[str]) -> list[str]:
    """Each rule's text as first shown (a rule by its id), in order."""
    first: dict[str, str] = {}
    for text in texts:
        first.setdefault(text.split("]", 1)[0], text)
    return list(first.values())


def coverage(matched: dict[str, Any]) -> list[dict[str, Any]]:
    """Figure 4: each fold's readings, then the pooled ones (as a fold of every run)."""
    pooled = {"groups": ["pooled"], "runs": None, "keys": {
        key: {"block": matched["keys"][key], "run": matched["run"][key]}
        for key in matched["keys"]}}
    return [*matched["folds"], pooled]


def replayed(records: Sequence[TraceRecord], tmp: Path, by_project: bool = False
             ) -> tuple[dict[str, Any], list[dict[str, Any]], set[str]]:
    """The product's replay (mode on, no embeddings; ``by_project``: each project a scope
    of its own): its summary, its rows, and the ids of the failures its store kept as
    benign exits."""
    summary = replay(records, "on", tmp / "out", store=tmp / "store", embeddings="off",
                     scope_by_project=by_project)
    lines = (tmp / "out" / ITERATIONS_FILE).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    ids = [r["failure_id"] for r in rows if r["failure_id"]]
    with Memory(home=tmp / "store", store_url="", embeddings="off") as mem:
        kept = port(mem).store.failures_by_id(ids)
    return summary, rows, {i for i in ids if i not in kept}


def ratio(k: int, n: int) -> str:
    return f"{k}/{n} = {k / n:.3f}" if n else f"{k}/0"


def mark(met: bool | None) -> str:
    return "[no case]" if met is None else ("[met]" if met else "[MISSED]")


def rules_line(r: dict[str, int]) -> list[str]:
    says, rules, work = r.get("says", 0), r.get("rules", 0), r.get("work_shown", 0)
    return [f"    1. says what to do   {ratio(says, rules)}"
            f" {mark(says >= TARGET_SAYS * rules if rules else None)}",
            f"    2. the work          shown failure {ratio(work, rules)}"
            f" {mark(work <= TARGET_WORK * rules if rules else None)};"
            f" most of its provenance {ratio(r.get('work_most', 0), rules)}"
            f" {mark(r.get('work_most', 0) <= TARGET_WORK * rules if rules else None)};"
            f" rules judged {r.get('judged', 0)} (a failure with no command is not)"]


def agreement_line(a: dict[str, int], key: str) -> str:
    if not a:
        return "    3. fix agreement     not measured: the trace's steps are no commands"
    named = a.get("named", 0)
    return (f"    3. fix agreement     cross-run repeats {a.get('repeats', 0)}, covered"
            f" {a.get('covered', 0)}, the rule names a fix {named}: rule"
            f" {ratio(a.get('rule', 0), named)}"
            f" {mark(a.get('rule', 0) >= a.get('base_k', 0) if named else None)};"
            f" baseline naming as many {ratio(a.get('base_k', 0), named)}, naming one"
            f" {ratio(a.get('base', 0), named)}; the failed command's own program"
            f" {ratio(a.get('self', 0), named)}; baseline on every repeat"
            f" {ratio(a.get('base_all', 0), a.get('repeats', 0))}"
            + (f" (key: {key})" if key else ""))


def print_fold(label: str, figures: dict[str, Any], fold: dict[str, Any]) -> None:
    print(f"  {label}")
    for line in [*rules_line(figures["rules"]),
                 agreement_line(figures["agreement"], figures.get("key", ""))]:
        print(line)
    print(f"    4. coverage          {mark(holds(fold))}: " + "; ".join(
        f"{key} {reading} {verdict(f)}" for key, by_reading in fold["keys"].items()
        for reading, f in by_reading.items()))


def bench_set(name: str, kind: str, data: Path, quick: bool,
              by_project: bool = False) -> dict[str, Any]:
    records = convert(kind, [data / name])
    if quick and kind == "mini-swe-agent":
        keep = sorted({r.run for r in records})[::QUICK_EVERY]
        records = [r for r in records if r.run in set(keep)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="reflect-actionable-") as tmp:
        summary, rows, benign = replayed(records, Path(tmp), by_project)
    figures = measure(records, rows, benign, shell=SHELL[kind], by_project=by_project)
    folds = coverage(summary["matched"])
    print(f"== {name}: {len({r.run for r in records})} runs, {len(records)} iterations,"
          f" replay --mode on --embeddings off{' --scope-by-project' if by_project else ''}"
          f" {time.perf_counter() - start:.0f} s")
    for n, (mine, fold) in enumerate(zip(figures["folds"], folds, strict=False), 1):
        print_fold(f"fold {n} ({fold['runs']} runs: {', '.join(fold['groups'])})", mine, fold)
    print_fold("pooled", figures["pooled"], folds[-1])
    for what, texts in figures["examples"].items():
        for text in texts:
            print(f"  e.g. {what}: " + " | ".join(line.strip() for line in text.splitlines()))
    for text, named, truth in figures["agreement_examples"]:
        print(f"  e.g. fix named {named}, the run's next programs {truth}: "
              + " | ".join(line.strip() for line in text.splitlines()[1:]))
    figures["coverage"] = [{"groups": f["groups"], "held": holds(f),
                            "readings": readings(f)} for f in folds]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DATA)
    parser.add_argument("--quick", action="store_true",
                        help=f"every {QUICK_EVERY}th run of mini-swe-agent-dev")
    parser.add_argument("--scope-by-project", action="store_true",
                        help="each repository a scope of its own, the baseline's too")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"quick": args.quick, "scope_by_project": args.scope_by_project,
                               "sets": {}}
    for name, kind in SETS.items():
        if not (args.data / name).is_dir():
            print(no_data(args.data / name), file=sys.stderr)
            return 1
        figures["sets"][name] = bench_set(name, kind, args.data, args.quick,
                                          args.scope_by_project)
    emit(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
