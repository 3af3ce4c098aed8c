"""The samples of output that README.md and docs/ show, produced by running what they show.

cog runs these from the pages (`cog -r -I docs README.md docs/*.md` rewrites them,
`make lint` checks them with `cog --check`), each in a store of its own with no
REFLECT_ variable of the caller's. Ids are random in every run: each is shown as the
`L-sample…`/`F-sample…` id of its order of appearance, so a page changes only when
what the command prints does.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import tempfile
from collections.abc import Iterator

_ID = re.compile(r"\b([FL])-[0-9a-z]{10}\b")
WIDTH = "100"  # columns of --help, whatever the terminal


@contextlib.contextmanager
def isolated() -> Iterator[str]:
    """A temporary store directory and working directory, the caller's REFLECT_ variables
    set aside; all restored after."""
    saved = dict(os.environ)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        for name in [n for n in os.environ if n.startswith("REFLECT_")]:
            del os.environ[name]
        os.environ.update(REFLECT_HOME=os.path.join(tmp, "store"), REFLECT_WORKER="off",
                          COLUMNS=WIDTH)
        os.chdir(tmp)
        try:
            yield tmp
        finally:
            os.chdir(here)
            os.environ.clear()
            os.environ.update(saved)


def stable_ids(text: str) -> str:
    seen: dict[str, str] = {}

    def sample(m: re.Match) -> str:
        return seen.setdefault(m[0], f"{m[1]}-sample{len(seen) + 1:03d}")

    return _ID.sub(sample, text)


def fenced(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def printed(call) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        call()
    return out.getvalue()


def demo() -> str:
    """`make demo`: the memory-on arm from its third iteration, and the summary."""
    from reflect.cli import demo as scripted

    with isolated():
        out = printed(scripted.main)
    on = out.split("===== memory on =====", 1)[1]
    third = on[on.index("--- iteration 3"):on.index("\n\n=====")]
    summary = out[out.index("===== iterations to success ====="):]
    return fenced(stable_ids(f"{third}\n\n{summary}"))


TABLE_ERROR = """Traceback (most recent call last):
  File "/repo/repro.py", line 12, in <module>
    print(User.objects.count())
django.db.utils.OperationalError: no such table: auth_user
"""
ASSERTION = """============================= short test summary info ==============================
FAILED tests/test_admin.py::test_changelist - AssertionError: assert 3 == 2
========================= 1 failed, 12 passed in 0.41s ==========================
"""


def recall() -> str:
    """`Memory.recall` for the third iteration of run task-42, after runs task-40 and
    task-41 hit and fixed the same database problem."""
    from reflect import Memory

    goal = "Fix the user count on the admin changelist"
    with isolated(), Memory(embeddings="hash") as mem:
        for run in ("task-40", "task-41"):
            mem.capture(run=run, iteration=1, goal=goal, phase="test",
                        action="python repro.py", exit_code=1, error_text=TABLE_ERROR)
            mem.outcome(run=run, iteration=2, success=True,
                        action="python manage.py migrate && python repro.py")
        mem.capture(run="task-42", iteration=1, goal=goal, phase="test", action="pytest tests/",
                    exit_code=127, error_text="bash: pytest: command not found")
        mem.capture(run="task-42", iteration=2, goal=goal, phase="test",
                    action="python -m pytest tests/test_admin.py", exit_code=1,
                    error_text=ASSERTION)
        text = mem.recall(run="task-42", goal=goal, phase="test", iteration=3).text
    return fenced(stable_ids(text))


def learn() -> str:
    """`reflect learn claude-code` on the transcripts the real binary wrote."""
    from pathlib import Path

    from reflect.cli.main import main

    here = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "transcripts"
    with isolated():
        out = printed(lambda: main(["learn", "claude-code", str(here / "claude-code")]))
    return fenced(f"$ reflect learn claude-code tests/fixtures/transcripts/claude-code\n"
                  f"{stable_ids(out)}")


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command and subcommand of `reflect`, with its parser, in `--help`'s order."""
    from reflect.cli.main import parser

    def walk(p: argparse.ArgumentParser, name: str):
        yield name, p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, q in action.choices.items():
                    yield from walk(q, f"{name} {sub}")

    yield from walk(parser(), "reflect")


def help_pages() -> str:
    """docs/commands.md: each command's `--help`, as it prints."""
    with isolated():
        pages = [f"### `{name}`\n\n" + fenced(p.format_help()) for name, p in commands()]
    return "\n\n".join(pages)
