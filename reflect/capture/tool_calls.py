"""A client's tool call as memory records it, whether a hook sees it live or a transcript
is read afterwards: its action, its exit code and output as each client writes them, and
which success is a failure's outcome. Light: a hook imports it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from reflect.base.digest import sha256
from reflect.capture import commands
from reflect.capture.numbers import whole_number
from reflect.capture.resolution import same_purpose

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import Any

TARGET_KEYS = ("file_path", "notebook_path", "path", "url", "pattern", "query")
KEEP_OPEN = 20  # failed commands a session keeps for a rerun to resolve, newest
EXIT_LINE = re.compile(r"Exit code:? (-?\d+)")  # Claude Code's first line of a Bash failure
STEP_KEY = re.compile(r"[0-9a-f]{32}")  # what ``step_key`` makes
# The header Codex puts above a call's output for the model: a last resort.
EXITED = re.compile(r"^Process exited with code (-?\d+)$", re.MULTILINE)
# client -> the tools whose success its hooks are told of (PostToolUse): those that can
# change a failed command's outcome. A Read or a Grep cannot, and starts no process.
CHANGING_TOOLS = {
    "claude-code": ("Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "Task", "Agent"),
    "codex": ("Bash", "apply_patch"),
}


def is_step(client: str, tool: str, failed: bool) -> bool:
    """Whether a call that ended is one of the agent's steps, which number its iterations:
    every call its client's hooks are told ended (a failure of any tool, a success of one
    that can change an outcome), as a transcript read afterwards counts them too."""
    return failed or tool in CHANGING_TOOLS[client]


def action_of(tool: str, tool_input: object) -> str:
    """A Bash call's command; for other tools their name and target (the file, the URL)."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if tool == "Bash":
        return str(tool_input.get("command") or "")
    target = next((str(tool_input[k]) for k in TARGET_KEYS if tool_input.get(k)), "")
    return f"{tool} {target}".strip()


def step_key(run: str, call: str | None) -> str | None:
    """The key a step is stored by, whoever records it (a live hook, ``reflect learn`` of
    the transcript, a replay of what was kept aside): a digest of the run as stored and the
    client's id of the call, which both carry (``tool_use_id``), so a call id is never kept
    as given. None for a step with no id: stored as it comes."""
    if not call:
        return None
    return sha256(f"{run}\0{call}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def reported(open_failures: Iterable[str], command: str) -> bool:
    """Whether a success is reported as an outcome: while a failed command is open, every
    step that did something (not one that only looked) may be part of its fix, and one that
    serves its purpose gets past it (``resolution.same_purpose``)."""
    return any(failed.strip() for failed in open_failures) and not commands.inspects(command)


def still_open(open_failures: list[str], command: str) -> list[str]:
    """The failed commands a success of ``command`` did not get past."""
    return [failed for failed in open_failures if not same_purpose(failed, command)]


def failure_text(error: str) -> tuple[int | None, str]:
    """A Claude Code failure's exit code and output: Bash's ``Exit code N`` line, then the
    output; another tool's error whole."""
    first, _, rest = error.partition("\n")
    match = EXIT_LINE.fullmatch(first.strip())
    # An absurd number (5000 digits) is no exit code: the capture keeps the rest.
    return (whole_number(match[1]), rest) if match else (None, f"{first}\n{rest}".strip())


def codex_exit_code(payload: dict[str, Any]) -> tuple[int | None, str]:
    """The exit code and output one Codex rollout payload records for a shell call: its
    ``item_completed`` or ``exec_command_end`` event, else its output's header."""
    item = payload["item"] if isinstance(payload.get("item"), dict) else payload
    code = whole_number(item.get("exit_code"))  # 1, and "1" or 1.0 as well
    if code is not None:
        return code, str(item.get("aggregated_output") or "")
    if payload.get("type") == "function_call_output":
        header = codex_output(payload.get("output")).partition("\nOutput:\n")[0]
        match = EXITED.search(header)
        if match:
            return whole_number(match[1]), ""
    return None, ""


def codex_output(output: object) -> str:
    """A call's output in a rollout: text, or an older Codex's ``{"output": …}``."""
    if isinstance(output, dict):
        return str(output.get("output") or "")
    return output if isinstance(output, str) else ""
