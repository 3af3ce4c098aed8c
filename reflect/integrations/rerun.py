"""What a ``PreToolUse`` hook says of a Bash command about to run, from what the session's
hooks saw (``hooks.State``): the same command as one that just failed, with nothing run
since that could change its outcome, is a sure repeat (refused, unless refusal is off); a
program not found in the project before, and not run or installed since, is told. What is
not refused is worded to be true whenever it is read: Claude Code adds it after the
command's result, Codex after the call."""

from __future__ import annotations

import re

from reflect.base.named import NamedTuple
from reflect.base.text import clip

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from reflect.integrations.hooks import Event, State

# Failures the world outside the session may change (a service not up yet, a time limit,
# memory): the same command may pass a moment later, so its rerun is no sure repeat.
OUTSIDE = frozenset({"network", "timeout", "resource"})


class Seen(NamedTuple):
    """What the session's hooks saw of a Bash command about to run: it failed just now and
    nothing that could change its outcome ran since (``sure``: unchanged, it fails again),
    or a program it runs was not found in the project and has not run since."""

    action: str
    error: str
    sure: bool = False
    refuse: bool = False  # sure, and refusal is on (``Settings.refuse_repeats``)
    program: str = ""


def before_command(event: Event, state: State) -> Seen | None:
    if event.tool != "Bash" or not event.action:
        return None
    last = state.last or {}
    action = state.scrub(event.action)
    if last.get("error") and last.get("action") == action:
        return Seen(action, last["error"], sure=bool(last.get("sure")),
                    refuse=bool(last.get("refuse")))
    for program in programs(action):
        if program in state.missing and not provides(action, program):
            return Seen(action, f"{program}: command not found", program=program)
    return None


def refusal(seen: Seen) -> str:
    """The reason a sure repeat is refused, which the model reads in place of its result."""
    return (f"reflect refused to run `{clip(seen.action, 200)}`: it failed just now in this "
            f"session ({clip(seen.error, 200)}) and nothing that could change its outcome has "
            "run since, so it would fail the same way. Fix the cause, then run it again.")


def told(seen: Seen) -> str:
    """What the hooks saw, worded as what it is: nothing was stopped."""
    if seen.program:
        return (f"reflect: `{seen.program}` was not found in this project earlier "
                f"(`{seen.error}`), and no command since has run or installed it: if this "
                f"command failed that way, install `{seen.program}` or run it another way.")
    said = (f"reflect: `{clip(seen.action, 200)}` had failed just before this run "
            f"({clip(seen.error, 200)})")
    if seen.sure:
        return (f"{said} and nothing that could change its outcome ran in between: if it "
                "failed again, it is the same failure; fix its cause before another rerun.")
    return (f"{said}, a failure the world outside the session may change (a service not up "
            "yet, a time limit, memory): if it failed again, see to that before another rerun.")


def provides(command: str, program: str) -> bool:
    """Whether ``command`` installs ``program``, defines it, or names a path to it: the
    fix of its "command not found" (the one its hint recommends), not a repeat of it."""
    name = re.escape(program)
    return bool(re.search(
        rf"\b(?:install|add)\s[^;&|]*?(?<![\w.-]){name}(?![\w-]|\.\w)"  # pip, go, apt, …
        rf"|\balias\s+{name}=|\bfunction\s+{name}\b|(?<![\w.-]){name}\s*\(\s*\)"
        rf"|/{name}(?![\w.-])"  # a link or a file made, or a path run
        r"|\bPATH=", command))  # where programs are looked for changes


def programs(command: str) -> list[str]:
    """The program each part of a shell command line runs (``A=1 pytest -x && make`` ->
    ``pytest``, ``make``)."""
    found = []
    for part in re.split(r"&&|\|\||[;|&()]", command):
        words = [w for w in part.split() if not re.match(r"^\w+=", w)]
        if words:
            found.append(words[0])
    return found
