"""What a shell command line is made of, read without running a shell.

Agents send whole scripts as one action: ``cd /repo && python x.py``, heredocs that
write a file and then run it, pipelines. Memory needs three things of them: a short
form a prompt can carry, the simple command whose exit code the line returns, and a
key (program and target) that tells when a later step re-ran the same command.
"""

from __future__ import annotations

from reflect.base import lazy
from reflect.base.text import clip

MAX_BRIEF = 100  # characters of an action in a block
MAX_ARG = 40  # a longer argument (an inline script, a long path) is elided

_HEREDOC = lazy.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_SEPARATOR = lazy.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_ASSIGNMENT = lazy.compile(r"^[A-Za-z_]\w*=")
# Steps that set the scene for the command rather than being it.
_PRELUDE = {"cd", "export", "source", ".", "set", "echo", "true", "pushd", "popd", "sleep"}
_WRAPPERS = {"sudo", "env", "timeout", "time", "nice", "command", "exec", "xargs"}
_WRAPPER_ARG = lazy.compile(r"^(?:-\S*|\d[\d.]*[smhd]?)$")
_PYTHON = lazy.compile(r"^python(?:\d(?:\.\d+)?)?$")
# Programs that only look (at files, the tree, the repository); with ``_PRELUDE``, a line
# made of them alone changes nothing, unless it writes a file or edits one in place.
_READERS = {"cat", "nl", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag",
            "git grep", "git diff", "git status", "git log", "git show", "git blame", "ls",
            "find", "pwd", "wc", "sed", "awk", "which", "file", "stat", "tree", "diff", "cmp",
            "sort", "uniq", "cut", "printf"}
_REDIRECT = lazy.compile(r">(?!\s*&|\s*/dev/null)")  # `2>&1` and `>/dev/null` write nothing
_EDITS = {"sed": ("-i", "--in-place"), "find": ("-delete", "-exec", "-execdir")}
# Flags that ask a program about itself: `pytest --version` runs no test, whatever it says.
_ASKS = {"--version", "-V", "--help", "-h"}


def without_heredocs(action: str) -> str:
    """The action with each heredoc's body removed, its ``<<EOF`` marker kept."""
    lines = (action or "").splitlines()
    kept, end = [], None
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        kept.append(line)
        m = _HEREDOC.search(line)
        if m:
            end = m.group(2)
    return "\n".join(kept)


def brief(action: str, limit: int = MAX_BRIEF) -> str:
    """The action as a block shows it: heredoc bodies and long arguments elided, its
    lines joined by ``; ``, at most ``limit`` characters; each cut at a word boundary."""
    lines = [line.strip() for line in without_heredocs(action).splitlines()
             if line.strip() and not line.strip().startswith("#")]  # a comment did nothing
    words: list[str] = []
    for word in " ; ".join(lines).split():
        if not words and word.startswith("/") and "/bin/" in word:
            word = word.rsplit("/", 1)[-1]  # an interpreter by its full path: its name says it
        words.append(clip(word, MAX_ARG, at_word=True))
    return clip(" ".join(words).replace("; ;", ";"), limit, at_word=True)


def simple_commands(action: str) -> list[list[str]]:
    """The simple commands of the line, in order, each as its words (quotes kept
    simple: a quoted argument with spaces stays split, which is enough to find the
    program and its first arguments)."""
    out = []
    for part in _SEPARATOR.split(without_heredocs(action)):
        words = [w.strip("'\"") for w in part.split()]
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS):
            words = words[1:]
            while words and _WRAPPER_ARG.match(words[0]):  # `timeout 30s`, `nice -n 5`
                words = words[1:]
        if words and not words[0].startswith("#"):
            out.append(words)
    return out


def last_command(action: str) -> list[str]:
    """The simple command whose status the line returns when it printed nothing: the
    last one (a pipeline returns its last command's status; ``a && b`` returns b's)."""
    commands = simple_commands(action)
    return commands[-1] if commands else []


def program_and_args(words: list[str]) -> tuple[str, list[str]]:
    """The program a simple command runs and its arguments. ``git grep`` and ``git diff``
    are their own programs; ``python3`` is python and ``python -m pytest`` is pytest."""
    if not words:
        return "", []
    name = words[0].rsplit("/", 1)[-1]
    if _PYTHON.match(name):
        if len(words) > 2 and words[1] == "-m":
            return words[2], words[3:]
        return "python", words[1:]
    if name == "git" and len(words) > 1:
        return f"git {words[1]}", words[2:]
    return name, words[1:]


def program(words: list[str]) -> str:
    return program_and_args(words)[0]


def kind(action: str) -> str:
    """The kind of command a line runs, as earlier runs' failures are grouped by it: the
    program of its first step that does work (``cd``, assignments and a heredoc's step
    aside; the first, as ``python x.py | head`` is python's), ``python -m X`` as X, a
    script by its name (``reproduce.py``), ``python -c`` as such; "" for no command."""
    for words in simple_commands(action.replace("(", " ").replace(")", " ")):
        if words[0] in _PRELUDE or any(w.startswith("<<") for w in words):
            continue  # a heredoc's step writes the file a later step runs
        name, rest = program_and_args(words)
        if name == "python" and rest:
            return "python -c" if rest[0] == "-c" else rest[0].rsplit("/", 1)[-1]
        return name
    return ""


def inspects(action: str) -> bool:
    """Whether the line only looks: every command a reader (``cat``, ``grep``, ``sed -n``,
    ``git diff``), a prelude or a question to a program about itself (``asks``), and
    nothing written (no ``>``, no ``sed -i``)."""
    commands = simple_commands(action)
    return bool(commands) and not _REDIRECT.search(without_heredocs(action)) and all(
        c[0] in _PRELUDE or asks(c) or (program(c) in _READERS and not any(
            w.startswith(_EDITS.get(program(c), ())) for w in c[1:])) for c in commands)


def asks(words: list[str]) -> bool:
    """Whether a simple command only asks its program about itself (``pytest --version``,
    ``python -V``): it looks, and does not do what the program is for."""
    _, args = program_and_args(words)
    return bool(args) and all(w in _ASKS for w in args)


def main_command(action: str) -> list[str]:
    """The line's main command: its last step that is not a prelude such as ``cd``."""
    commands = simple_commands(action)
    main = [c for c in commands if c[0] not in _PRELUDE] or commands
    return main[-1] if main else []


def shown_program(action: str) -> str:
    """The main command's program as a sentence names it: ``pytest`` for ``python -m
    pytest``, ``bin/test`` as it was run (its name alone would read as the shell's), an
    interpreter as the run wrote it (``python3``: the agent's ``python`` may be none)."""
    words = main_command(action)
    if words and "/" in words[0] and not words[0].startswith("/"):
        return words[0]
    name = program(words)
    return words[0].rsplit("/", 1)[-1] if name == "python" else name


def key(action: str) -> tuple[str, str]:
    """Program and target of the line's main command: a later step with the same key
    re-ran the command."""
    main = main_command(action)
    if not main:
        return ("", "")
    name, rest = program_and_args(main)
    args = [w for w in rest if not w.startswith("-")]
    target = next((a for a in args if "/" in a or "." in a or "::" in a), args[0] if args else "")
    return (name, target)
