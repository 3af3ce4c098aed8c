"""What the hooks keep between events (REFLECT_HOME/hooks/): every change of parallel hooks
of one session survives, and no raw secret is ever written there or echoed back."""

import json
import shlex

from conftest import REPO, start_hook
from secret_corpus import SECRETS
from test_integration_claude_code import SESSION, event, hook, refusal

from reflect import Memory
from reflect.integrations.hooks import State, session_file


def state(home) -> tuple[dict, dict]:
    hooks = home / "hooks"
    session = json.loads((hooks / session_file(SESSION)).read_text())
    return session, json.loads((hooks / "missing.json").read_text())


def test_parallel_failure_hooks_of_one_session_lose_no_change(own_store):
    Memory().close()  # the store directory exists: state files are written
    failures = [event("PostToolUseFailure", tool_input={"command": f"tool{n} --check"},
                      error=f"Exit code 127\n/bin/bash: line 1: tool{n}: command not found")
                for n in range(6)]
    procs = [start_hook(cwd=REPO) for _ in failures]
    for proc, failure in zip(procs, failures, strict=True):
        proc.stdin.write(json.dumps(failure).encode())
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    session, missing = state(own_store)
    assert sorted(session["open"]) == [f"tool{n} --check" for n in range(6)]
    assert missing["programs"] == [f"tool{n}" for n in range(6)]
    with Memory() as mem:
        assert len(mem.failures(run=SESSION)) == 6


def test_no_secret_reaches_the_state_files_or_a_warning(own_store):
    lines = [line for _, line in SECRETS.values()]
    command = "\n".join(f"echo {shlex.quote(line)}" for line in lines) + "\nexit 3"
    hook(event("UserPromptSubmit", prompt="Fix the deploy: " + "\n".join(lines)))
    hook(event("PostToolUseFailure", tool_input={"command": command},
               error="Exit code 3\n" + "\n".join(lines)))
    warning = refusal(hook(event("PreToolUse", tool_input={"command": command}))[0])
    assert "failed just now" in warning
    written = "".join(p.read_text() for p in (own_store / "hooks").iterdir() if p.is_file())
    assert json.loads((own_store / "hooks" / session_file(SESSION)).read_text())["open"]
    leaked = [kind for kind, (secret, _) in SECRETS.items()
              if secret in written or secret in warning]
    assert leaked == []


def test_sessions_never_share_a_file_nor_take_the_project_s(own_store):
    own_store.mkdir(mode=0o700, exist_ok=True)
    for session in ("team/alice", "team:alice", "missing"):
        state_of = State(own_store, session)
        with state_of.changing():
            state_of.open.append(f"pytest {session}")
    state_of = State(own_store, "missing")
    with state_of.changing():
        state_of.missing.add("nosuchtool")
    assert State(own_store, "team/alice").open == ["pytest team/alice"]
    assert State(own_store, "team:alice").open == ["pytest team:alice"]
    assert State(own_store, "missing").open == ["pytest missing"]
    assert State(own_store, "anyone").missing == {"nosuchtool"}


def test_a_change_that_leaves_the_missing_programs_alone_does_not_rewrite_their_file(
        own_store):
    hooks = own_store / "hooks"
    hooks.mkdir(mode=0o700, parents=True)
    (hooks / "missing.json").write_text('{"programs":["nosuchtool"]}\n')  # not as _write puts it
    for session in ("a", "b"):
        state_of = State(own_store, session)
        with state_of.changing():
            state_of.open.append("pytest")
            state_of.missing.discard("pytest")
    assert (hooks / "missing.json").read_text() == '{"programs":["nosuchtool"]}\n'
    with state_of.changing():
        state_of.missing.add("tool2")
    assert json.loads((hooks / "missing.json").read_text()) == {"programs": ["nosuchtool", "tool2"]}
