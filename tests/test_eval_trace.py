import json

import pytest
from conftest import run_cli

from reflect.eval._trace import TraceError, TraceRecord, read_trace, write_trace


def line(**fields) -> str:
    record = {"run": "r", "iteration": 1, "success": False, **fields}
    return json.dumps(record)


def write(tmp_path, *lines: str):
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def test_round_trip_keeps_every_field(tmp_path):
    records = [
        TraceRecord(run="r1", iteration=1, goal="g", phase="test", action="pytest",
                    exit_code=1, error_text="E: boom", success=False, ts=1700000000.5,
                    project="acme/app"),
        TraceRecord(run="r1", iteration=2, exit_code=0, success=True),
        TraceRecord(run="r2", iteration=1, exit_code=None, success=False),
    ]
    path = tmp_path / "out" / "t.jsonl"
    assert write_trace(path, records) == 3
    assert read_trace(path) == records
    assert set(json.loads(path.read_text().splitlines()[0])) == {
        "run", "iteration", "goal", "phase", "action", "exit_code", "error_text", "success", "ts",
        "project"}
    assert [p.name for p in path.parent.iterdir()] == ["t.jsonl"]  # no temporary file left


def test_optional_fields_default_and_blank_lines_are_skipped(tmp_path):
    path = write(tmp_path, line(), "", line(iteration=2, success=True))
    first, second = read_trace(path)
    assert (first.goal, first.error_text, first.exit_code, first.ts) == ("", "", None, None)
    assert second.success


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("{not json", "Expecting property name"),
        ("[1, 2]", "expected a JSON object"),
        (line(eror_text="x"), "unknown field(s) eror_text"),
        (json.dumps({"run": "r", "iteration": 2}), "missing field(s) success"),
        (line(run=""), "'run' must be a non-empty string"),
        (line(iteration="3"), "'iteration' must be an integer"),
        (line(iteration=True), "'iteration' must be an integer"),
        (line(success="no"), "'success' must be true or false"),
        (line(exit_code=1.5), "'exit_code' must be an integer or null"),
        (line(exit_code=0), "'success' is false but 'exit_code' is 0"),
        (line(error_text=["x"]), "'error_text' must be a string"),
        (line(ts="yesterday"), "'ts' must be a number"),
    ],
)
def test_bad_line_names_its_number(tmp_path, bad, says):
    path = write(tmp_path, line(run="first"), bad)
    with pytest.raises(TraceError) as e:
        read_trace(path)
    assert f"{path}:2: " in str(e.value)
    assert says in str(e.value)


def test_iterations_must_increase_within_a_run(tmp_path):
    path = write(tmp_path, line(iteration=1), line(run="other", iteration=1), line(iteration=1))
    with pytest.raises(TraceError, match=r":3: run 'r' iteration 1 does not follow iteration 1"):
        read_trace(path)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(TraceError, match="cannot read trace"):
        read_trace(tmp_path / "absent.jsonl")
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match="not UTF-8"):
        read_trace(path)


def test_cli_replay_of_a_malformed_trace_exits_1_with_the_line(tmp_path):
    path = write(tmp_path, line(), "{oops")
    done = run_cli("eval", "replay", str(path))
    assert done.returncode == 1
    assert f"{path}:2:" in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()


def test_cli_misuse_exits_2(tmp_path):
    assert run_cli("eval", "replay", "t.jsonl", "--mode", "sometimes").returncode == 2
    assert run_cli("eval", "convert", "swe-agent", "x", "-o", "t.jsonl").returncode == 2
    assert run_cli("eval", "convert", "reflexion", "x").returncode == 2  # no -o


def test_cli_unwritable_output_exits_1(tmp_path, data_dir):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    source = next((data_dir / "reflexion").rglob("*.jsonl"))
    done = run_cli("eval", "convert", "reflexion", str(source), "-o", str(blocker / "t.jsonl"))
    assert done.returncode == 1
    assert "check the path and its permissions" in done.stderr.decode()
