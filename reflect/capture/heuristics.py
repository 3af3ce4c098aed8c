"""Offline lessons: a trigger and a hypothesized fix for a failure, with no model.

Capture writes one in the failure's own transaction, so this module does no I/O and runs
only regexes over bounded text (each compiled on its first use: a capture stops at the
first row that matches). ``RULES`` is an ordered table: the first row
whose patterns all match names the category and severity and builds the guidance from the
error's own details (module, table, file, command); add a row above the first more general
one. Nothing matched: a "general" lesson that still names the action and the error.

Severity: ``high`` blocks every later step until fixed (a missing module, command, table or
file; a file that no longer parses); ``medium`` is this step's logic; ``low`` is transient.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from reflect.base import lazy
from reflect.base.text import clip, one_line

__all__ = ["CATEGORIES", "SEVERITIES", "Heuristic", "heuristic_lesson"]

# import = import/dependency, test = test assertion, network = network/API,
# environment = environment/setup
CATEGORIES = ("syntax", "import", "type", "test", "timeout", "resource", "permission",
              "network", "environment", "general")
SEVERITIES = ("low", "medium", "high")

# The caps of every lesson's trigger and guidance, whoever writes it: these rules, a
# model (reflect.capture.review), a person (teach) or another store (import).
TRIGGER_MAX = 160
GUIDANCE_MAX = 300  # the rules' texts aim for ~200
_SCAN_MAX = 4000  # characters of a message the rules look at (head and tail)


@dataclass(frozen=True)
class Heuristic:
    category: str  # one of CATEGORIES
    severity: str  # one of SEVERITIES
    trigger: str  # when the lesson applies
    guidance: str  # the hypothesized fix


# -- text helpers -------------------------------------------------------------

def _one_line(text: str, limit: int) -> str:
    """One line, cut at a word boundary to ``limit`` characters (with an ellipsis)."""
    return clip(one_line(text), limit, at_word=True)


def _q(text: str, limit: int = 80) -> str:
    """Quote an identifier from the error with backticks, bounded."""
    return "`" + _one_line(text.replace("`", "'"), limit) + "`"


# The two internal records below are named tuples, not frozen dataclasses: a cold
# process (a hook) builds them for every capture, at ~1 ms less each.
class _Ctx(NamedTuple):
    etype: str
    message: str
    action: str
    phase: str
    exit_code: int | None
    act: str  # the action quoted for a sentence, or "the command"
    cmd: str  # the program the action runs
    detail: str  # the message, short
    text: str  # "ErrorType: message", what the rows' message patterns search
    own_module: bool = False  # the missing module is the run's or the repository's own
    m: re.Match[str] | None = None  # the matching row's message match

    def g(self, i: int = 0) -> str:
        """Group ``i`` of the row's match; by default its first non-empty group."""
        if self.m is None or i > self.m.re.groups:
            return ""
        return (self.m.group(i) or "") if i else next((v for v in self.m.groups() if v), "")


def _first(pattern: re.Pattern[str], *texts: str) -> str:
    for text in texts:
        m = pattern.search(text or "")
        if m:
            return next((g for g in m.groups() if g), "")
    return ""


# -- guidance builders ----------------------------------------------------------

_PACKAGES = {  # import name -> distribution name, where they differ
    "yaml": "pyyaml", "cv2": "opencv-python", "PIL": "pillow", "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "dotenv": "python-dotenv",
    "jwt": "PyJWT", "attr": "attrs", "Crypto": "pycryptodome", "skimage": "scikit-image",
    "serial": "pyserial", "docx": "python-docx", "git": "GitPython", "MySQLdb": "mysqlclient",
    "fitz": "pymupdf", "zmq": "pyzmq", "google.protobuf": "protobuf", "magic": "python-magic",
}
_LOCAL = {"src", "app", "tests", "test", "lib", "utils", "config", "settings", "main",
          "core", "common", "helpers", "conftest"}  # nearly always the project's own code
_PY_TOOLS = {"pytest", "black", "ruff", "mypy", "flake8", "isort", "pylint", "coverage", "tox"}
_NODE_TOOLS = {"tsc", "jest", "eslint", "prettier", "vitest", "ts-node", "mocha"}
_ALIASES = {"np": "numpy as np", "pd": "pandas as pd", "plt": "matplotlib.pyplot as plt"}
_EXIT_LABELS: dict[int | None, str] = {
    2: " (misuse)", 124: " (timed out)", 126: " (not executable)", 127: " (command "
    "not found)", 137: " (killed, likely out of memory)", 143: " (terminated by a signal)",
    -15: " (terminated by a signal)"}

_SRC_PATH = lazy.compile(r'File "([^"]+)"|\(([^()]+?), line \d+\)')
_ACTION_FILE = lazy.compile(r"(?<![\w./-])([\w./-]{1,200}\.(?:py|js|ts|sh|ya?ml|json|toml))\b")
_LINE = lazy.compile(r"line (\d+)")
_IN_PLACE = lazy.compile(r"\b(sed|perl)\b")
_COMMAND = (r"(?-i:command not found: ?([^\s:]{1,100})|(?<![^\s:])([^\s:]{1,100}): "
            r"(?:command )?not found|'([^']{1,100})' is not recognized)")
_COMMAND_RE = lazy.compile(_COMMAND)
_PATH = lazy.compile(
    r"(?:can't open file|No such file or directory:?|cannot access) '([^']{1,200})'"
    r"|(?<![^\s:'])([^\s:']{1,200}): No such file|'([^']{1,200})'"
    r"|file or directory not found: (\S{1,200})")
_PERM_PATH = lazy.compile(r"'([^']{1,200})'|: ([^\s:]{1,200}): Permission denied")
_SYSTEM = lazy.compile(r"site-packages|dist-packages|^/usr/|^/opt/")
_HOST = lazy.compile(r"host='([^']+)'|https?://([^/\s'\"]+)|ENOTFOUND (\S+)|"
                     r"resolve host:? '?([\w.-]+)|\b((?:localhost|\d+\.\d+\.\d+\.\d+):\d+)")
_NODEID = lazy.compile(r"(?<![\w./-])([\w./-]{1,200}\.py::[\w\[\].:-]{1,200})")
_EXPECTED = lazy.compile(r"Expected:? (.{1,40}?)\s+Received:? (.{1,40})(?:\s|$)")
_CLAIM = lazy.compile(r"(assert .{1,90})|AssertionError:? (.{1,90})")


def _py_module(c: _Ctx) -> str:
    name = c.g()[:80]
    top = name.split(".")[0]
    if top in _LOCAL or any(w.startswith((f"{top}/", f"{top}.")) for w in c.action.split()):
        return (f"{_q(name)} is the project's own code: run from the repository root (or "
                "`pip install -e .`) and check the import path.")
    pkg = _PACKAGES.get(name) or _PACKAGES.get(top) or top
    if "." in name and name not in _PACKAGES:
        return (f"{_q(top)} is importable but has no {_q(name)}: fix the import path, or "
                f"install the version of `{pkg}` that provides it (`pip install -U {pkg}`).")
    return f"Install the missing package: `pip install {pkg}`."


def _own_module(c: _Ctx) -> str:
    top = c.g()[:80].split(".")[0]
    return (f"{_q(top)} is the run's own code, not a package: create it where the script "
            "runs, or run from the directory that holds it (`PYTHONPATH=.`).")


def _node_module(c: _Ctx) -> str:
    name = c.g()[:80]
    if name.startswith((".", "/")):
        return (f"The relative import {_q(name)} does not resolve: check the path and file "
                f"extension from the importing file.")
    pkg = "/".join(name.split("/")[:2]) if name.startswith("@") else name.split("/")[0]
    types = f" (and `npm install -D @types/{pkg}` for types)" if c.etype == "TS2307" else ""
    return f"Install the missing package: `npm install {pkg}`{types}, then rerun."


# What the syntax errors Python names ask for, at ``{where}`` (the file and line, else
# "the line reported"): a judge or a bare interpreter often names no file.
_SYNTAX_CAUSES = tuple((lazy.compile(p), text) for p, text in (
    (r"Maybe you meant ([^?\n]{1,30}) instead of ([^?\n]{1,30})\?",
     "Python suggests it: use {1} instead of {2} at {where} (a comparison is `==`, an "
     "assignment `=`)."),
    (r"^expected ':'", "Add the missing `:` at the end of the `if`, `for`, `while`, `def` or "
     "`class` line ({where})."),
    (r"was never closed|unmatched|does not match opening parenthesis",
     "Close the bracket opened at {where}: count the brackets on that line and the next."),
    (r"unterminated (?:triple-quoted )?string literal",
     "Close the string at {where} with the quote it opens with."),
    (r"'(\w{1,20})' outside (function|loop)",
     "Move `{1}` at {where} into the {2} it belongs to: check its indentation."),
    (r"expected an indented block",
     "Indent the body of the block {where} opens (a statement at least, or `pass`)."),
    (r"unindent does not match|unexpected indent|inconsistent use of tabs",
     "Indent the lines at {where} to their block's level, with spaces only."),
))


def _syntax(c: _Ctx) -> str:
    # The file is the message's, or the one an in-place edit changed: a script the command
    # ran may only import the module that is broken (`python reproduce.py` after a `sed -i`
    # of the library), so its name would send the agent to the wrong file.
    tool = _first(_IN_PLACE, c.action)
    path = _first(_SRC_PATH, c.message) or (_first(_ACTION_FILE, c.action) if tool else "")
    line = _first(_LINE, c.message)
    where = (_q(path, 60) if path else "the line reported") + (
        f" line {line}" if path and line else "")
    if tool:
        what = "indentation" if c.etype in ("IndentationError", "TabError") else "syntax"
        where = where if path else "the file"
        return (f"The in-place `{tool}` edit broke the {what} of {where}: view the lines around "
                f"it and rewrite them whole (a Python script or a heredoc) instead of `{tool}`.")
    for cause, text in _SYNTAX_CAUSES:
        if found := cause.search(c.message):
            return text.format("", *found.groups(), where=where)
    if not path:
        return ("Read the line reported and the one before it: a bracket, quote, colon or "
                "operator is missing or extra there.")
    what = _one_line(_SRC_PATH.sub("", c.message), 60)  # without its "(file, line N)"
    return f"Fix the syntax at {where} ({what}): view the lines around it first."


# What a name taken from tool output must look like before a hint puts it in a command:
# an attacker picks the "command" in `bash: $(curl …|sh): command not found`.
_NAME_SHAPE = lazy.compile(r"[\w.+@-]{1,100}")
_PATH_SHAPE = lazy.compile(r"[\w./~+@:-]{1,200}")  # a path, or host:port


def _shaped(value: str, shape: re.Pattern[str]) -> str:
    """``value`` when it has the shape of what it stands for, else ""."""
    return value if shape.fullmatch(value) else ""


def _command(c: _Ctx) -> str:
    cmd = _shaped(_one_line(_first(_COMMAND_RE, c.message) or c.cmd, 40), _NAME_SHAPE)
    q = _q(cmd or "the command")
    if cmd in _PY_TOOLS:
        return (f"{q} is not on PATH: run it as `python -m {cmd}` (if that fails, "
                f"`python -m pip install {cmd}`).")
    if cmd in ("pip", "pip3", "python", "python2"):
        return f"{q} is not on PATH: use `python3` (and `python3 -m pip`) instead."
    if cmd in _NODE_TOOLS:
        pkg = "typescript" if cmd == "tsc" else cmd
        return f"{q} is not on PATH: run it as `npx {cmd}` or `npm install -D {pkg}` first."
    return (f"{q} is not installed or not on PATH: install it, call it by its full path "
            f"(`command -v {cmd}`), or use another tool.")


def _permission(c: _Ctx) -> str:
    path = _shaped(_first(_PERM_PATH, c.message), _PATH_SHAPE)
    if _SYSTEM.search(path):
        return (f"{_q(path)} is a system location: install into a virtualenv "
                "(`python -m venv .venv`) or with `pip install --user`, not with sudo.")
    if c.exit_code == 126 or path == c.cmd:
        path = path or c.cmd or "the script"
        return (f"{_q(path)} is not executable: `chmod +x {_one_line(path, 80)}` or run it "
                "with its interpreter (`bash`, `python`); do not reach for sudo.")
    return (f"Check the modes and owner of {_q(path or 'the target')} (`ls -l`) and write "
            "somewhere you own (the working tree or /tmp) instead of using sudo blindly.")


def _test(c: _Ctx) -> str:
    node = _first(_NODEID, c.message)
    ev = _EXPECTED.search(c.message)
    claim = (f"expected {ev.group(1)}, received {ev.group(2)}" if ev
             else _first(_CLAIM, c.message) or c.detail)
    rerun = f"`python -m pytest {_one_line(node, 90)}`" if node else c.act
    return (f"Compare expected and actual in {_q(claim or '?', 70)}; fix the code, not the "
            f"test; rerun {rerun}.")


def _name(c: _Ctx) -> str:
    name = c.g()
    if name in _ALIASES or name in sys.stdlib_module_names:
        return f"Add `import {_ALIASES.get(name, name)}` at the top of the file."
    return f"Define or import {_q(name, 60)} before it is used (check its spelling and scope)."


def _text(text: str) -> Callable[[_Ctx], str]:
    """Template fields: act, cmd, detail (message), m (first group), m1, m2, host, path."""
    def build(c: _Ctx) -> str:
        host = _shaped(_first(_HOST, c.message, c.action), _PATH_SHAPE)
        path = _shaped(_first(_PATH, c.message), _PATH_SHAPE)
        return text.format(act=c.act, cmd=_q(c.cmd or "the command", 40), detail=c.detail,
                           m=_q(c.g(), 80), m1=_q(c.g(1), 60), m2=_q(c.g(2), 60),
                           host=_q(host) if host else "the remote host",
                           path=_q(path) if path else "the missing file")
    return build


# -- the table ----------------------------------------------------------------


class _Rule(NamedTuple):
    category: str
    severity: str
    guide: Callable[[_Ctx], str]
    etype: re.Pattern[str] | None
    msg: re.Pattern[str] | None
    phase: re.Pattern[str] | None
    codes: frozenset[int]
    own_module: bool

    def match(self, c: _Ctx) -> _Ctx | None:
        if (self.codes and c.exit_code not in self.codes) or (self.own_module
                                                               and not c.own_module):
            return None
        if any(p and not p.search(t) for p, t in ((self.etype, c.etype), (self.phase, c.phase))):
            return None
        m = self.msg.search(c.text) if self.msg else None
        return None if self.msg and m is None else c._replace(m=m)


def _rule(category: str, severity: str, guide: Callable[[_Ctx], str] | str, *, etype: str = "",
          msg: str = "", phase: str = "", codes: tuple[int, ...] = (),
          own_module: bool = False) -> _Rule:
    """One row. Every pattern given must match: ``msg`` (case-insensitive) searches
    "ErrorType: message", ``etype`` the error type alone; ``codes`` the exit code;
    ``own_module`` that capture found the missing module to be the run's own."""
    def comp(p: str, flags: int = 0) -> re.Pattern[str] | None:
        return lazy.compile(p, flags) if p else None

    return _Rule(category, severity, _text(guide) if isinstance(guide, str) else guide,
                 comp(etype), comp(msg, re.I), comp(phase, re.I), frozenset(codes), own_module)


_SYN = "^Synthesized$"
_TIMEOUT = ("Bound the command (e.g. `timeout 60 …`), try a smaller input, and check for an "
            "infinite loop or a prompt waiting for input.")
_MEMORY = ("Out of memory: process a smaller input or in chunks, use fewer workers, "
           "and free large objects; check for unbounded growth in a loop.")

RULES: tuple[_Rule, ...] = (
    # import / dependency
    _rule("import", "high", "Circular import around {m}: import the name inside the function "
          "that uses it, or move shared code out.", msg=r"partially initialized module '([\w.]+)'"),
    # the run's own module is on no path: an environment matter, not a package to install
    _rule("environment", "high", _own_module, msg=r"No module named '?([\w.]+)'?",
          own_module=True),
    _rule("import", "high", _py_module, msg=r"No module named '?([\w.]+)'?"),
    _rule("import", "high", "{m2} has no {m1}: check the spelling and the installed version "
          "(`pip show`).", msg=r"cannot import name '(\w+)' from '([\w.]+)'"),
    _rule("import", "high", _node_module, msg=r"Cannot find (?:module|package) '([^']+)'"),
    _rule("network", "high", "pip cannot reach an index for {m} (no network?): use what is "
          "installed (`pip list`) or a local wheel.",
          msg=r"requirement (\S{1,100}) \(from versions: none"),
    # environment / setup
    _rule("environment", "high", "Table {m} does not exist yet: run the migrations first "
          "(`python manage.py migrate`; in a script, `call_command('migrate')`).",
          msg=r"no such table: ([\w.]+)|relation \"([\w.]+)\" does not exist"),
    _rule("environment", "high", "Column {m} is missing: the schema is out of date; run the "
          "migrations (`makemigrations`, `migrate`) first.", msg=r"no such column: ([\w.]+)"),
    _rule("environment", "high", "Configure Django before using it: set "
          "`DJANGO_SETTINGS_MODULE` or call `settings.configure()`, then `django.setup()`.",
          msg=r"settings are not configured|Apps aren't loaded yet"),
    _rule("environment", "high", _command, msg=r"^CommandNotFound:|" + _COMMAND),
    # syntax (TS1xxx are TypeScript's syntax errors)
    _rule("syntax", "high", _syntax, etype=r"^(SyntaxError|IndentationError|TabError|TS1\d{3})$"),
    # type / name / attribute / key errors
    _rule("type", "medium", "TypeScript does not know {m}: fix the spelling or declare or import "
          "it (test or Node globals need `@types/jest` / `@types/node`).", etype="^TS2304$",
          msg=r"Cannot find name '([^']+)'"),
    _rule("type", "medium", _name, msg=r"name '(\w+)' is not defined"),
    _rule("type", "medium", "A value is `None` ({detail}): find what returned `None` (a failed "
          "lookup, a function without `return`) and handle it.", msg=r"'NoneType' object"),
    _rule("type", "medium", "{m1} has no attribute {m2}: check {m1}'s API (`dir()`, its docs or "
          "source) for the right name.", msg=r"'([\w.]+)'(?: object)? has no attribute '(\w+)'"),
    _rule("type", "medium", "Check the signature of {m} ({detail}) and pass exactly the "
          "parameters it declares.", msg=r"(?<![\w.])([\w.]{1,100}\(\)) (?:takes|missing|got)"),
    _rule("type", "medium", "An index runs past the end of a {m}: check loop bounds and "
          "`i + 1` or `i - 1` reads against `len()`, and the empty case.",
          msg=r"(list|string|tuple|array) index out of range"),
    _rule("type", "medium", "Key {m} is missing: print the mapping's actual keys where it is "
          "read and fix the key or the data.", msg=r"^KeyError: ['\"]?([^'\"]{1,80})"),
    # tests
    _rule("test", "medium", "pytest has no fixture {m}: define it in `conftest.py` or install "
          "the plugin that provides it.", msg=r"fixture '(\w+)' not found"),
    _rule("test", "medium", _test, msg=r"^(AssertionError|TestFailure):|expect\(received\)|"
          r"\bFAILED [\w/.-]+::"),
    # a judge's verdict on code that runs (LeetCode's): the logic, not the syntax
    _rule("test", "medium", "The code runs but answers wrong: trace one failing case by hand "
          "through its conditions, loop bounds, operators and return value, then fix the "
          "logic.", msg=r"^\w+: Wrong Answer\b"),
    _rule("environment", "medium", "Python's encoding here is ASCII: run with "
          "`PYTHONIOENCODING=utf-8` (or `LC_ALL=C.UTF-8`), or open files with "
          "`encoding=\"utf-8\"`.", msg=r"'ascii' codec can't (?:en|de)code"),
    # network / API (before timeouts: a read timeout is a network symptom)
    _rule("network", "high", "{host} is unreachable: the sandbox may have no network, so use "
          "local resources (installed packages, fixtures, mocks) instead of retrying.",
          msg=r"name resolution|Name or service not known|\bENOTFOUND\b|resolve host|"
          r"Network is unreachable|Failed to establish a new connection"),
    _rule("network", "medium", "Nothing is listening at {host}: start the service first (and "
          "wait until it is ready) or use a stub.", msg=r"Connection refused|\bECONNREFUSED\b"),
    _rule("network", "low", "A network call to {host} failed ({detail}): retry once; if it "
          "persists, use local resources or a mock.",
          etype="Connection|HTTPError|SSLError|ReadTimeout|ConnectTimeout|URLError"),
    # resources, permissions, files, timeouts
    _rule("resource", "medium", _MEMORY, msg=r"^\w*MemoryError:|out of memory|Cannot allocate"),
    _rule("permission", "high", _permission, msg=r"^Permission(Denied|Error):|"
          r"Permission denied|\bEACCES\b|Operation not permitted"),
    _rule("environment", "high", "{path} is not there: create it first, or fix the path "
          "(check `pwd` and `ls`).",
          msg=r"^FileNotFound|No such file or directory|\bENOENT\b|file or directory not found"),
    _rule("timeout", "medium", _TIMEOUT, msg=r"^\w*Timeout\w*:|timed out|Timeout >|"
          r"Exceeded timeout"),
    _rule("resource", "medium", "The command was killed (SIGKILL) from outside: by a time "
          "limit, a person, or the kernel's out-of-memory killer (`dmesg` says which). "
          "Bound its time and memory, then rerun it.", msg=r"Killed by signal 9 \(SIGKILL\)"),
    # exit codes: any error type for the unambiguous ones, else only synthesized entries
    _rule("timeout", "medium", _TIMEOUT, codes=(124,)),
    # SIGTERM: 143 from a shell, -15 from Python's subprocess; no sign of a loop in it
    _rule("timeout", "medium", "The command was terminated by a signal (SIGTERM) from "
          "outside: a time limit, the harness or a person stopped it; if it runs long, bound "
          "it (`timeout 60 …`) or run less of it.", codes=(143, -15)),
    _rule("resource", "medium", _MEMORY, codes=(137,)),
    _rule("permission", "high", _permission, codes=(126,)),
    _rule("environment", "high", _command, codes=(127,)),
    _rule("test", "medium", "The tests failed with no error text: rerun them with output "
          "visible, then fix the code, not the test.", etype=_SYN, codes=(1,), phase="test"),
    _rule("general", "medium", "{cmd} rejected its arguments (exit 2): check `--help` and the "
          "flags and paths.", etype=_SYN, codes=(2,)),
    _rule("general", "medium", "No error text: rerun it with output visible "
          "(drop `-q` and redirects, add `2>&1`) to get the real error.", etype=_SYN),
)


def _trigger(c: _Ctx) -> str:
    when = (f"running {c.act}" if c.action.strip()
            else f"the {_one_line(c.phase, 30)} step" if c.phase.strip() else "a step")
    code = "" if c.exit_code is None else f"exit code {c.exit_code}"
    if c.etype == "Synthesized" or not (c.etype or c.message.strip()):
        return f"{when} fails with {code or 'no error text'}{_EXIT_LABELS.get(c.exit_code, '')}"
    if not c.message.strip():
        return f"{when} fails with {_one_line(c.etype, 40)}" + (f" ({code})" if code else "")
    head = f"{when} fails with {_one_line(c.etype, 40) or 'an error'}: "
    return head + _one_line(c.message, max(40, TRIGGER_MAX - len(head)))


def _general(c: _Ctx) -> str:
    """No rule knows the error: a hint would only restate it."""
    return ""


def heuristic_lesson(error_type: str, message: str, action: str = "", phase: str = "",
                     exit_code: int | None = None, own_module: bool = False) -> Heuristic:
    """The offline lesson for one failure: the first matching row of ``RULES``.
    ``own_module``: capture found the module it could not import to be the run's or the
    repository's own (``reflect.capture.own_module``), so no package would provide it."""
    message = message or ""
    if len(message) > _SCAN_MAX:  # the rules see the head and the tail of a long message
        message = message[: _SCAN_MAX // 2] + "\n" + message[-_SCAN_MAX // 2:]
    action = (action or "")[:1000]
    words = [w for w in action.split() if "=" not in w]  # skip VAR=value prefixes
    etype = (error_type or "").strip()[:100]
    ctx = _Ctx(etype, message, action, (phase or "")[:100], exit_code,
               _q(action, 60) if action.strip() else "the command", words[0] if words else "",
               _one_line(message, 90), f"{etype}: {message}", own_module)
    guide: Callable[[_Ctx], str]
    category, severity, guide = "general", "medium", _general
    for rule in RULES:
        matched = rule.match(ctx)
        if matched is not None:
            category, severity, guide, ctx = rule.category, rule.severity, rule.guide, matched
            break
    guidance = _one_line(guide(ctx), GUIDANCE_MAX)  # "" when no rule knows the error
    return Heuristic(category, severity, _one_line(_trigger(ctx), TRIGGER_MAX),
                     guidance[:1].upper() + guidance[1:])
