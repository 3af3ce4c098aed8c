"""Converters from published agent logs into the trace format (see ``trace.py``).

Each converter reads what its data set really holds and invents nothing; what
a data set lacks stays empty (``""``, ``null``) and the README says what that
means for the metrics.

mini-swe-agent (``*.traj.json``): a run is one trajectory (its
``instance_id``). Each assistant turn whose next user turn begins with
``<returncode>N</returncode>`` is an iteration: the action is the turn's
```` ```bash ```` block, the error text is the observation's output
(``<output>``, or ``<output_head>`` and ``<output_tail>`` when it was cut),
kept only when N is non-zero, and ``ts`` is the model response's ``created``
time. Turns answered without a return code produce no record: format errors
("provide EXACTLY ONE action"), a command that timed out, the final
submission. The goal is the text inside ``<pr_description>``.

Reflexion (``*.jsonl``, one task a line): a run is one task, named by its
``task_id`` (or ``name``), so a reflexion_* trace and its simple_* twin
have the same runs and compare paired; a task found twice is an error
(convert each file into its own trace). The published
records keep the number of reflections and the final outcome, not the
attempts themselves: the reflexion loop writes one reflection after each
failed attempt, so a task with k reflections made k + 1 attempts, the first
k failed, and the last one succeeded exactly when ``is_solved``. No attempt
has error text, exit code or time; only the final attempt's code is kept
(``solution``, its action). ``simple_*`` runs have no reflections: one
attempt. The reflections themselves are not converted: they are the model's
lessons, not errors.

DebugBench (``*.json``, a list per bug type): a run is one record, named
``<bug type>/<slug>`` (``#2`` added when a file holds the slug twice).
Iteration 1 is the judge running the buggy code, a failure whose error text
is ``traceback_messages``; records without a traceback do not say how the
buggy code failed, so their run starts at iteration 2. Iteration 2 is the
model's fix, judged: success is ``test_result_bool``, the error text is the
judge's runtime error, or its verdict with the count of passed cases
(``Wrong Answer: 44 of 52 test cases passed``); its action is ``fixing_exp``,
its time the judge's ``task_finish_time``. A record whose judge never finished (``state`` other
than ``SUCCESS``) has no fix iteration: its outcome is unknown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from reflect.base.choices import TRACE_FORMATS
from reflect.eval._trace import TraceRecord

_RETURNCODE = re.compile(r"\s*<returncode>(-?\d+)</returncode>")
_BASH = re.compile(r"```bash[^\n]*\n(.*?)```", re.DOTALL)
_PR = re.compile(r"<pr_description>(.*?)</pr_description>", re.DOTALL)
_INSTANCE = re.compile(r"([\w.-]+)__([\w.-]+)-\d+")  # SWE-bench: owner__repo-number
_PR_PREFIX = re.compile(r"^\s*Consider the following PR description:\s*")


class ConvertError(ValueError):
    """Input that a converter cannot read; the message names the file and the fix."""


def files(paths: Iterable[str | Path], pattern: str) -> list[Path]:
    """Files given as such (in order) or found under directories (sorted)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob(pattern) if p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise ConvertError(f"{path}: no such file or directory; give the data files or "
                               "the directory that holds them")
    if not found:
        raise ConvertError(f"no {pattern} files under {', '.join(map(str, paths))}; "
                           "is this the right format?")
    return found


def _load_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConvertError(f"cannot read {path}: {e.strerror or e}") from e
    except (ValueError, RecursionError) as e:
        raise ConvertError(f"{path}: not valid JSON ({e})") from None


# -- mini-swe-agent --------------------------------------------------------------


def mini_swe_agent(paths: Iterable[str | Path]) -> Iterator[TraceRecord]:
    for path in files(paths, "*.traj.json"):
        data = _load_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ConvertError(f"{path}: no 'messages' list; is it a mini-swe-agent "
                               "trajectory (*.traj.json)?")
        run = str(data.get("instance_id") or path.name.removesuffix(".traj.json"))
        yield from _trajectory(run, data["messages"], swe_bench_repository(run))


def swe_bench_repository(instance_id: str) -> str:
    """The repository of a SWE-bench instance id (``django__django-11099``: django/django),
    or "" for an id of another form."""
    m = _INSTANCE.fullmatch(instance_id)
    return f"{m[1]}/{m[2]}" if m else ""


def _trajectory(run: str, messages: list[dict[str, Any]], project: str = ""
                ) -> Iterator[TraceRecord]:
    goal = ""
    iteration = 0
    for index, message in enumerate(messages):
        role, content = message.get("role"), _text(message.get("content"))
        if role == "user" and not goal and (m := _PR.search(content)):
            goal = _PR_PREFIX.sub("", m[1]).strip()
        if role != "assistant" or index + 1 >= len(messages):
            continue
        reply = messages[index + 1]
        observed = _text(reply.get("content"))
        rc = _RETURNCODE.match(observed)
        blocks = _BASH.findall(content)
        if reply.get("role") != "user" or rc is None or len(blocks) != 1:
            continue  # a format error, a timeout or the submission: no return code
        iteration += 1
        code = int(rc[1])
        yield TraceRecord(
            run=run,
            iteration=iteration,
            goal=goal,
            action=blocks[0].strip(),
            exit_code=code,
            error_text=_output(observed) if code else "",
            success=code == 0,
            project=project,
            ts=_created(message),
        )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": …}]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _between(text: str, tag: str) -> str | None:
    start = text.find(f"<{tag}>")
    end = text.rfind(f"</{tag}>")
    if start < 0 or end < start:
        return None
    return text[start + len(tag) + 2 : end].strip("\n")


def _output(observation: str) -> str:
    whole = _between(observation, "output")
    if whole is not None:
        return whole
    head, tail = _between(observation, "output_head"), _between(observation, "output_tail")
    return "\n".join(part for part in (head, tail) if part)


def _created(message: dict[str, Any]) -> float | None:
    response = (message.get("extra") or {}).get("response") or {}
    created = response.get("created") if isinstance(response, dict) else None
    return float(created) if isinstance(created, int | float) else None


# -- Reflexion -------------------------------------------------------------------


def reflexion(paths: Iterable[str | Path]) -> Iterator[TraceRecord]:
    origin: dict[str, Path] = {}
    for path in files(paths, "*.jsonl"):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise ConvertError(f"cannot read {path}: {e.strerror or e}") from e
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                task = json.loads(line)
                task_id = str(task.get("task_id") or task["name"])
                records = list(_reflexion_task(task_id, task))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise ConvertError(f"{path}:{number}: not a Reflexion task record ({e}); "
                                   "expected task_id or name, prompt, is_solved") from None
            if task_id in origin:
                raise ConvertError(f"{path}:{number}: task {task_id!r} is also in "
                                   f"{origin[task_id]}; convert each run's file separately "
                                   "(e.g. reflexion_* and simple_* into two traces)")
            origin[task_id] = path
            yield from records


def _reflexion_task(task_id: str, task: dict[str, Any]) -> Iterator[TraceRecord]:
    solved = task["is_solved"]
    if not isinstance(solved, bool):
        raise TypeError("is_solved is not a boolean")
    attempts = len(task.get("reflections") or []) + 1
    for attempt in range(1, attempts + 1):
        last = attempt == attempts
        yield TraceRecord(
            run=task_id,
            iteration=attempt,
            goal=task["prompt"].strip(),
            phase="test",
            action=(task.get("solution") or "").strip() if last else "",
            success=solved if last else False,
        )


# -- DebugBench ------------------------------------------------------------------


def debugbench(paths: Iterable[str | Path]) -> Iterator[TraceRecord]:
    for path in files(paths, "*.json"):
        data = _load_json(path)
        if not isinstance(data, list):
            raise ConvertError(f"{path}: expected a JSON list of DebugBench records")
        bug_type = path.stem.removeprefix("python3_")
        seen: dict[str, int] = {}
        for number, record in enumerate(data, 1):
            try:
                slug = str(record["slug"])
                seen[slug] = seen.get(slug, 0) + 1
                run = f"{bug_type}/{slug}" + (f"#{seen[slug]}" if seen[slug] > 1 else "")
                yield from _debugbench_record(run, record)
            except (KeyError, TypeError, ValueError) as e:
                raise ConvertError(f"{path}: record {number} is not a DebugBench record ({e}); "
                                   "expected slug, description, test_result_bool, "
                                   "test_result_dict, traceback_messages") from None


def _debugbench_record(run: str, record: dict[str, Any]) -> Iterator[TraceRecord]:
    goal = record["description"].strip()
    traceback = (record.get("traceback_messages") or "").strip()
    if traceback:
        yield TraceRecord(run=run, iteration=1, goal=goal, phase="test", error_text=traceback,
                          success=False)
    judged = record["test_result_dict"] or {}
    if judged.get("state") != "SUCCESS":
        return  # the judge never finished: the fix's outcome is unknown
    success = record["test_result_bool"]
    if not isinstance(success, bool):
        raise TypeError("test_result_bool is not a boolean")
    finished = judged.get("task_finish_time")
    yield TraceRecord(
        run=run,
        iteration=2,
        goal=goal,
        phase="test",
        action=(record.get("fixing_exp") or "").strip(),
        error_text="" if success else _verdict(judged),
        success=success,
        ts=int(finished) / 1000 if finished not in (None, "") else None,
    )


def _verdict(judged: dict[str, Any]) -> str:
    """What the judge said about a failed fix: its error, else its verdict and counts."""
    error = judged.get("full_runtime_error") or judged.get("runtime_error")
    error = error or judged.get("full_compile_error") or judged.get("compile_error")
    if error:
        return str(error).strip()
    verdict = str(judged.get("status_msg") or "Rejected")
    correct, total = judged.get("total_correct"), judged.get("total_testcases")
    if correct not in (None, "") and total not in (None, ""):
        return f"{verdict}: {correct} of {total} test cases passed"
    return verdict


# -- Claude Code and Codex -------------------------------------------------------


def claude_code(paths: Iterable[str | Path]) -> Iterator[TraceRecord]:
    return _sessions("claude-code", paths)


def codex(paths: Iterable[str | Path]) -> Iterator[TraceRecord]:
    return _sessions("codex", paths)


def _sessions(client: str, paths: Iterable[str | Path]) -> Iterator[TraceRecord]:
    """The calls a live capture would have seen (``reflect.capture.transcripts``), each an
    iteration: every failure, and each shell command that passed. Texts, the session id
    too, are scrubbed as a capture keeps them (``learn`` the same), so a trace can be
    shared."""
    from reflect.api.learn import sessions
    from reflect.base import config
    from reflect.capture.entry import scrubbed
    from reflect.capture.scrub import Scrubber
    from reflect.capture.transcripts import Skipped, TranscriptError

    skipped = Skipped()
    try:
        found = sessions(client, list(paths), skipped)
    except TranscriptError as e:
        raise ConvertError(str(e)) from None
    if not found:
        raise ConvertError(f"no {client} sessions under {', '.join(map(str, paths))}; is this "
                           "the right format?")
    scrubber = Scrubber()

    def scrub(text: str) -> str:
        return scrubbed(scrubber, text)[0]

    for session in found:
        iteration, run = 0, scrub(session.run)
        for call in session.calls(skipped):
            if not call.failed and call.tool != "Bash":
                continue  # a look or an edit that worked: no step a harness reports
            iteration += 1
            yield TraceRecord(
                run=run, iteration=iteration, goal=scrub(session.goal),
                phase=call.tool.lower(), action=scrub(call.action),
                exit_code=call.exit_code, error_text=scrubber.scrub(call.error_text)[0],
                success=not call.failed, ts=call.ts, project=scrub(session.cwd))
    for why, n in skipped.most_common():
        config.warn(f"{client}: not converted: {why}: {n}")


CONVERTERS: dict[str, Callable[[Iterable[str | Path]], Iterator[TraceRecord]]] = dict(
    zip(TRACE_FORMATS, (mini_swe_agent, reflexion, debugbench, claude_code, codex),
        strict=True))


def convert(kind: str, paths: Iterable[str | Path]) -> list[TraceRecord]:
    if kind not in CONVERTERS:
        raise ConvertError(f"unknown format {kind!r}; choose one of {', '.join(CONVERTERS)}")
    return list(CONVERTERS[kind](list(paths)))
