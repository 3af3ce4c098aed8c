"""What worked: a failure is resolved only by a later step that re-ran its command (same
program and target) and passed, and the text says what changed in between. The next
step that merely exited 0 (an ``ls``, a ``cat``) says nothing about the fix."""

from __future__ import annotations

from collections.abc import Callable

from reflect import commands

MAX_STEPS = 2  # steps named before the rerun; more are counted
STEP_CHARS = 45


def reran(failed_action: str, action: str) -> bool:
    program, target = commands.key(failed_action)
    return bool(program) and (program, target) == commands.key(action)


def what_changed(failed_action: str, between: list[str], action: str) -> str:
    """One line: the steps that succeeded between the failure and the rerun (each by its
    short form), then the rerun; or that a plain rerun passed."""
    rerun = commands.brief(action, STEP_CHARS * 2)
    briefs = [commands.brief(s, STEP_CHARS) for s in between]
    between = [b for i, b in enumerate(briefs) if i == 0 or b != briefs[i - 1]]
    steps = [f"`{b}`" for b in between[-MAX_STEPS:]]
    if len(between) > MAX_STEPS:
        steps.insert(0, f"{len(between) - MAX_STEPS} more steps")
    if steps:
        return f"{'; '.join(steps)}, then `{rerun}` passed"
    if commands.brief(failed_action) == commands.brief(action):
        return f"`{rerun}` passed when rerun unchanged"
    return f"`{rerun}` passed"


def resolutions(open_failures: list[dict], action: str,
                between: Callable[[int], list[str]]) -> dict[str, str]:
    """For the open failures that ``action`` re-ran: failure id -> what worked.
    ``between(iteration)`` gives the steps that succeeded after that iteration."""
    return {f["id"]: what_changed(f["action"], between(f["iteration"]), action)
            for f in open_failures if reran(f["action"], action)}
