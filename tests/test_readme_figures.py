"""Docs that cannot drift: every CLI command is in the README, every figure in the README
and the docs/ pages names the command that regenerates it, that command exists, `make
figures` reruns every bench they name, and what a figure was before a change is in
CHANGELOG.md, not there.

A figure is a measured number: a time (ms, s), a size (MB, GB), a rate (GB/s, texts/s), a
share (%), a ratio (2.19x) or a count out of a total (4/7, 91 of 150), in a page's prose
or tables; code blocks and inline code are examples, not figures. Its command is a
`bench/NAME.py`, a `make TARGET` or a `pytest tests/...` named in the same section (the
text from one heading to the next) or in the section's heading.
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO

from reflect.cli.main import parser

README = REPO / "README.md"
# The user's guide and the pages its design, evaluation, speed, security and shared-store
# detail moved to; each is checked on its own.
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
FIGURE = re.compile(
    r"\d[\d,.]*\s?(?:ms|s|MB|GB|GiB|GB/s|texts/s|%|x)(?![\w/])"
    r"|\b\d[\d,]*/\d[\d,]*\b"
    r"|\b\d[\d,]* of \d[\d,]*\b"
)
# Numbers that define something rather than measure it.
NOT_FIGURES = ("95% percentile bootstrap", "95% bootstrap intervals")
BENCH = re.compile(r"\bbench/([\w-]+)\.py\b")
MAKE = re.compile(r"(?:`|^)make ([a-z][\w-]*)", re.M)  # `make demo`, or in a code block
PYTEST = re.compile(r"\.venv/bin/python -m pytest((?: tests/[\w/]+\.py)+)")
# What a figure was before a change belongs in CHANGELOG.md.
HISTORY = re.compile(
    r"\([^()]*\d[^()]*\bbefore\)"  # "0 (43 before)", "(21 not caught before)"
    r"|\bearlier in this release\b|\bthan before\b|\bbefore these\b|\bfell from\b"
    r"|\bused to (?:be|take)\b"
)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) pairs; a `#` line inside a code block is not a heading."""
    found, heading, body, fenced = [], "", [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if line.startswith("#") and not fenced:
            found.append((heading, "\n".join(body)))
            heading, body = line, []
        else:
            body.append(line)
    found.append((heading, "\n".join(body)))
    return found


def figures(body: str) -> list[str]:
    prose = re.sub(r"`[^`\n]*`", "", FENCE.sub("", body))
    prose = " ".join(prose.split())  # a figure may be wrapped over two lines
    for phrase in NOT_FIGURES:
        prose = prose.replace(phrase, "")
    return FIGURE.findall(prose)


def commands(text: str) -> list[str]:
    return ([f"bench/{name}.py" for name in BENCH.findall(text)]
            + [f"make {target}" for target in MAKE.findall(text)]
            + [path for paths in PYTEST.findall(text) for path in paths.split()])


def uncommanded(text: str) -> list[str]:
    """Sections that quote figures and name no command that regenerates them."""
    return [f"{heading or '(top)'}: {', '.join(found[:4])}"
            for heading, body in sections(text)
            if (found := figures(body)) and not commands(heading + "\n" + body)]


def make_targets(repo: Path) -> set[str]:
    makefile = (repo / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))


def missing_commands(text: str, repo: Path) -> list[str]:
    """Commands the README names that do not exist in the repository."""
    targets = make_targets(repo)
    missing = []
    for command in sorted(set(commands(text))):
        if command.startswith("make "):
            if command.removeprefix("make ") not in targets:
                missing.append(command)
        elif not (repo / command).is_file():
            missing.append(command)
    return missing


def history(text: str) -> list[str]:
    flat = " ".join(FENCE.sub("", text).split())
    return [flat[max(m.start() - 40, 0):m.end()] for m in HISTORY.finditer(flat)]


def figures_driver():
    """bench/figures.py, loaded from its file (bench/ is not a package)."""
    name = "bench_figures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "figures.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def readme() -> str:
    return README.read_text(encoding="utf-8")


def page_ids(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def every_page() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in PAGES)


def test_every_cli_command_is_in_the_readme():
    sub = next(a for a in parser()._actions if a.dest == "command")
    text = readme()
    assert [name for name in sub.choices if f"reflect {name}" not in text] == []


@pytest.mark.parametrize("page", PAGES, ids=page_ids)
def test_every_figure_names_the_command_that_regenerates_it(page):
    assert uncommanded(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES, ids=page_ids)
def test_every_command_a_page_names_exists(page):
    assert missing_commands(page.read_text(encoding="utf-8"), REPO) == []


def test_make_figures_reruns_every_bench_the_pages_name():
    driver = figures_driver()
    steps = {step.argv[0] for step in driver.STEPS}
    text = every_page()
    assert "make figures" in commands(text)
    named = {c for c in commands(text) if c.startswith("bench/")} - {"bench/figures.py"}
    assert named - steps == set()
    # and the tables it prints are sections of the pages
    headings = {heading for page in PAGES
                for heading, _ in sections(page.read_text(encoding="utf-8"))}
    assert [h for h, _, _ in driver.SECTIONS if h not in headings] == []


@pytest.mark.parametrize("page", PAGES, ids=page_ids)
def test_what_figures_were_before_is_in_the_changelog_not_the_pages(page):
    assert history(page.read_text(encoding="utf-8")) == []


def test_the_checks_catch_a_planted_bad_readme(tmp_path):
    """Each check above fails on a copy of a page with one fault planted."""
    good = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    # The storage section loses every command it names; its table stays.
    head, rest = good.split("## Storage and durability", 1)
    section, tail = rest.split("\n## ", 1)
    for pattern in (BENCH, MAKE, PYTEST):
        section = pattern.sub("the bench", section)
    assert "| store |" in section and not commands(section)
    bad = f"{head}## Storage and durability{section}\n## {tail}"
    # A bench that does not exist, a Makefile target that does not, and history.
    bad += ("\n## Planted\n\nIt takes 12 ms (`bench/no_such_bench.py`, `make no-such-target`);"
            " 0 leaked (43 before).\n\n## Planted, no command\n\n| a | b |\n|---|---|\n"
            "| took | 3.5 s |\n")
    planted = tmp_path / "design.md"
    planted.write_text(bad, encoding="utf-8")
    text = planted.read_text(encoding="utf-8")
    assert any(u.startswith("## Storage and durability") for u in uncommanded(text))
    assert any(u.startswith("## Planted, no command: 3.5 s") for u in uncommanded(text))
    assert missing_commands(text, REPO) == ["bench/no_such_bench.py", "make no-such-target"]
    assert history(text) and "(43 before)" in history(text)[-1]
    # and a figure wrapped over two lines, or inside a table, is still a figure
    assert figures("took\n12\nms; | 4/7 [16.7, 100%] |") == ["12 ms", "4/7", "100%"]
    assert figures("`42 ms` in code\n```\n9 s\n```\n") == []
