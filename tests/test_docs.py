"""Docs that cannot drift: every sample of output in the README and docs/ is what its
command prints now (cog, from docs/samples.py), every option of every command has a help
text and is in docs/commands.md, and every install line names the distribution that is
this project."""

import argparse
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "docs"))
import samples  # docs/samples.py, beside the pages it writes

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]


def cog_check(*pages) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cogapp", "--check", "--verbosity=1",
                           "-I", str(REPO / "docs"), *map(str, pages)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_the_samples_of_output_are_what_the_commands_print():
    out = cog_check(*PAGES)
    assert out.returncode == 0, out.stdout + out.stderr + "\nrun `make docs` to rewrite them"


def test_a_stale_sample_is_caught(tmp_path):
    page = tmp_path / "README.md"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    page.write_text(readme.replace("memory on   3", "memory on   2", 1), encoding="utf-8")
    out = cog_check(page)
    assert out.returncode == 5 and "Check failed" in out.stdout + out.stderr


def test_every_option_of_every_command_has_a_help_text():
    bare = [f"{name} {a.option_strings or a.dest}" for name, p in samples.commands()
            for a in options(p) if not (a.help or "").strip()]
    assert bare == []


def test_every_option_of_every_command_is_in_the_docs():
    page = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    parts = dict(re.findall(r"^### `([^`]+)`\n(.*?)(?=^### |\Z)", page, re.M | re.S))
    found = list(samples.commands())
    assert len(found) > 30 and set(parts) == {name for name, _ in found}
    missing = [f"{name} {a.option_strings or a.metavar or a.dest}" for name, p in found
               for a in options(p)
               if not all(o in parts[name] for o in a.option_strings)
               or (not a.option_strings and str(a.metavar or a.dest) not in parts[name])]
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_install_lines_name_this_projects_distribution(page):
    """`reflect` on the package index is an unrelated project: an install line names this
    repository (`pip install .`) or the distribution reflect-memory."""
    text = page.read_text(encoding="utf-8")
    assert re.findall(r"pip install[^\n`]*?(?<![\w/.-])'?reflect(?:\[|'|\s|$)", text) == []


def section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_the_readmes_bash_loop_runs_as_written(tmp_path):
    """With the PATH line the README gives before it, the loop runs `reflect` from the
    clone's .venv: a failed step is captured, the next is shown it, and the success
    resolves it."""
    wiring = section((REPO / "README.md").read_text(encoding="utf-8"),
                     "## Wire it into a bash agent loop")
    (path_line,) = re.findall(r"`(export PATH=[^`]+)`", wiring)
    loop = re.search(r"```bash\n(.*?)```", wiring, re.S)[1]
    agent = tmp_path / "bin" / "my-agent"
    agent.parent.mkdir()
    # the fake agent: a command that fails until the block it was given names the failure
    agent.write_text("#!/bin/sh\ngrep -q 'No such file' \"$2\" && echo 'touch dates.cfg "
                     "&& cat dates.cfg' || echo 'cat dates.cfg'\n")
    agent.chmod(0o755)
    script = f"cd {REPO}\n{path_line}\ncd {tmp_path}\nexport PATH={agent.parent}:$PATH\n{loop}"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = "/usr/bin:/bin"  # no reflect of the caller's: the README's line finds it
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "No such file" in (tmp_path / "prompt.txt").read_text()
    listed = subprocess.run([str(REPO / ".venv" / "bin" / "reflect"), "failures", "list",
                             "--run", "task-42", "--format", "json"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, check=True).stdout
    (failure,) = json.loads(listed)["failures"]
    assert failure["action"] == "cat dates.cfg" and failure["iteration"] == 1
    assert "touch dates.cfg" in failure["resolution"]


def test_the_readmes_mcp_server_is_given_its_store():
    """An MCP client gives the server an environment of its own: the README's command
    names the store in it."""
    mcp = section((REPO / "README.md").read_text(encoding="utf-8"), "### MCP server")
    (add,) = [line for line in mcp.splitlines() if line.startswith("claude mcp add")]
    assert re.search(r" -e REFLECT_HOME=\S+ -- reflect mcp", add)


def test_the_readmes_mini_line_gives_mini_a_model():
    """mini with no model of its own stops at once ("No default model set"): the README's
    command names one, and the text says what the model needs."""
    mini = section((REPO / "README.md").read_text(encoding="utf-8"), "### mini-swe-agent")
    (run,) = [line for line in mini.splitlines() if "--agent-class reflect." in line]
    assert re.search(r"MSWEA_MODEL_NAME=\S+ |\s-m \S+", run), run
    assert "mini-extra config setup" in mini and "API key" in mini


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_command_tables_pointers_lead_where_they_say():
    """No "below" or "above" in the README's table of commands: each pointer is a link to
    a section of the README or a page of docs/ that exists."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = section(readme, "## Commands")
    assert re.findall(r"\b(?:below|above)\b", table) == []
    anchors = {anchor(h) for h in re.findall(r"^#+ (.+)$", readme, re.M)}
    links = re.findall(r"\]\(([^)\s]+)\)", table)
    assert links
    for link in links:
        path, _, fragment = link.partition("#")
        if path:
            assert (REPO / path).is_file(), link
        else:
            assert fragment in anchors, link
