"""Docs that cannot drift: every sample of output in the README and docs/ is what its
command prints now (cog, from docs/samples.py), every option of every command has a help
text and is in docs/commands.md, and every install line names the distribution that is
this project."""

import argparse
import re
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "docs"))
import samples  # noqa: E402 - docs/samples.py, beside the pages it writes

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
