"""Where the public data sets are, and what a test that needs them does without them: it
skips on a developer machine, and fails when they were expected (REFLECT_DATA or CI set)."""

import subprocess
import sys

import pytest
from conftest import REPO, data_location, missing_data


def test_present_data_is_used_whatever_the_environment(tmp_path):
    (tmp_path / "mini-swe-agent").mkdir()
    for env in ({}, {"CI": "true"}, {"REFLECT_DATA": str(tmp_path)}):
        assert missing_data(tmp_path, env) is None


def test_reflect_data_naming_an_empty_directory_says_there_are_none(tmp_path):
    """How a fresh clone's run is had on a machine with the data beside the repository:
    REFLECT_DATA=<an empty directory> skips the data tests; under CI they still fail."""
    for env in ({"REFLECT_DATA": str(tmp_path)}, {"REFLECT_DATA": str(tmp_path), "CI": "0"}):
        action, why = missing_data(tmp_path, env)
        assert action == "skip" and f"{tmp_path} is empty" in why
    action, why = missing_data(tmp_path, {"REFLECT_DATA": str(tmp_path), "CI": "true"})
    assert action == "fail" and "CI is set" in why


def test_a_developer_machine_without_the_data_skips_and_says_how_to_set_it(tmp_path):
    absent = tmp_path / "shared" / "data"
    for env in ({}, {"CI": ""}, {"CI": "false"}, {"CI": "0"}):
        action, why = missing_data(absent, env)
        assert action == "skip", env
        assert str(absent) in why and "REFLECT_DATA" in why


@pytest.mark.parametrize("ci", ["true", "1", "yes", "True"])
def test_ci_without_the_data_fails_and_says_where_it_looked(tmp_path, ci):
    absent = tmp_path / "shared" / "data"
    action, why = missing_data(absent, {"CI": ci})
    assert action == "fail"
    assert str(absent) in why and "set REFLECT_DATA" in why and "CI" in why


def test_reflect_data_set_to_a_missing_directory_fails(tmp_path):
    absent = tmp_path / "nowhere"
    action, why = missing_data(absent, {"REFLECT_DATA": str(absent)})
    assert action == "fail"
    assert f"REFLECT_DATA={absent}" in why and "set REFLECT_DATA" in why


def test_the_location_is_reflect_data_else_beside_the_repository(tmp_path, monkeypatch):
    assert data_location({}) == REPO.parent / "shared" / "data"
    assert data_location({"REFLECT_DATA": ""}) == REPO.parent / "shared" / "data"
    assert data_location({"REFLECT_DATA": str(tmp_path)}) == tmp_path
    monkeypatch.chdir(tmp_path)  # a relative REFLECT_DATA is taken from where pytest starts
    assert data_location({"REFLECT_DATA": "data"}) == tmp_path / "data"


def test_a_replay_without_the_data_sets_says_where_they_come_from(tmp_path):
    """`bench/replay.py` on a fresh clone: it exits 1 with one line pointing at the README's
    section, which names each folder with its source."""
    out = subprocess.run([sys.executable, str(REPO / "bench" / "replay.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert str(tmp_path / "mini-swe-agent-dev") in line
    assert '"The public data sets"' in line and "REFLECT_DATA" in line
    readme = (REPO / "README.md").read_text()
    section = readme.split("### The public data sets", 1)[1].split("\n## ", 1)[0]
    for folder, source in (("mini-swe-agent-dev/", "github.com/SWE-bench/experiments"),
                           ("debugbench/", "github.com/thunlp/DebugBench"),
                           ("reflexion/", "github.com/noahshinn/reflexion")):
        assert folder in section and source in section
