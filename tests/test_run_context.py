"""One run context, made when a ``Memory`` is: the run id as capture stores it in every
method, a capture kept aside replayed as it would have been stored, and every setting of
the environment checked once."""

import ast
import os

import pytest
from conftest import REPO, run_cli, store_held

from reflect import Memory, Settings
from reflect.api.context import RunContext
from reflect.api.memory import port

ADDRESSED = "ci-alice@example.com-42"  # scrubbed as it is stored: [REDACTED:email]-42
MISSING = "ModuleNotFoundError: No module named 'yaml'"


def test_a_run_id_the_scrubber_changes_is_the_same_run_in_every_command(own_store,
                                                                        monkeypatch):
    monkeypatch.setenv("REFLECT_RUN", ADDRESSED)
    captured = run_cli("capture", "--exit-code", "1", "--error-file", "-", stdin=MISSING.encode())
    assert captured.returncode == 0
    listed = run_cli("failures", "list", "--run", ADDRESSED).stdout.decode()
    assert "yaml" in listed and "alice" not in listed
    stats = run_cli("stats", "--run", ADDRESSED, "--format", "json").stdout.decode()
    assert '"failures": 1' in stats
    cleared = run_cli("clear", "--run", ADDRESSED, "--yes").stdout.decode()
    assert "deleted 1 failure(s)" in cleared
    with Memory() as mem:
        assert mem.failures() == []


def test_reflect_run_reports_the_success_of_a_run_the_scrubber_changes(own_store, tmp_path):
    flag = tmp_path / "fixed"
    command = f"test -e {flag} || {{ echo '{MISSING}' >&2; exit 1; }}"
    assert run_cli("run", "--run", ADDRESSED, "--", "sh", "-c", command).returncode == 1
    flag.touch()
    assert run_cli("run", "--run", ADDRESSED, "--", "sh", "-c", command).returncode == 0
    with Memory() as mem:
        [failure] = mem.failures(run=ADDRESSED)
        assert mem.failure(failure.failure_id) is not None
        assert port(mem).store.open_failures(failure.run, 10**6) == []  # resolved by the rerun


def stored_after(own_store, kept_aside: bool) -> tuple[dict, list]:
    """Two runs that fail the same way, the second one's capture stored at once or kept
    aside while another process holds the store and replayed by the next capture."""
    settings = Settings(credit=False, busy_timeout=0.05)
    with Memory(model="openai/gpt-4o-mini", embeddings="hash", settings=settings) as mem:
        for early in ("early", "earlier"):  # two runs' mistake: a house rule
            mem.capture(run=early, exit_code=1, error_text=MISSING)
        assert mem.recall(run="late", goal="report").items  # the late run was shown it
        held = store_held(own_store)
        if kept_aside:
            held.__enter__()
        mem.capture(run="late", exit_code=1, error_text=MISSING)
        if kept_aside:
            held.__exit__(None, None, None)
            assert (own_store / "pending.jsonl").exists()
        mem.capture(run="later", exit_code=1, error_text="ValueError: another cause")
        lessons = port(mem).store.active_lessons([f.fingerprint for f in mem.failures()])
        return port(mem).store.job_counts(), sorted(
            (lesson.get("losses", 0), lesson.get("wins", 0)) for lesson in lessons.values())


def test_a_capture_kept_aside_is_stored_as_a_direct_capture_is(own_store, tmp_path):
    direct = stored_after(own_store, kept_aside=False)
    (own_store / "reflect.db").unlink()
    for wal in own_store.glob("reflect.db-*"):
        wal.unlink()
    assert stored_after(own_store, kept_aside=True) == direct


@pytest.mark.parametrize(("field", "variable", "value", "said"), [
    ("half_life_days", "REFLECT_HALF_LIFE_DAYS", "0", "a number of days above 0"),
    ("half_life_days", "REFLECT_HALF_LIFE_DAYS", "-30", "a number of days above 0"),
    ("escalate_after", "REFLECT_ESCALATE_AFTER", "0", "a whole number of failures, at least 1"),
    ("max_failures", "REFLECT_MAX_FAILURES", "-1", "a whole number of failures, 0 or more"),
    ("similar_runs", "REFLECT_SIMILAR_RUNS", "many", "a whole number of runs"),
])
def test_a_setting_out_of_range_is_said_with_its_range_and_the_default_stands(
        own_store, monkeypatch, caplog, field, variable, value, said):
    monkeypatch.setenv(variable, value)
    with Memory() as mem:
        assert getattr(mem.settings, field) == getattr(Settings(), field)
        mem.capture(run="r", exit_code=1, error_text=MISSING)
        assert "REPEATED FAILURE" not in mem.recall(run="r").text
        mem.consolidate()
    assert f"{variable}={value!r} is not {said}" in caplog.text
    assert "using the default" in caplog.text


def test_no_setting_is_read_from_the_environment_after_the_memory_is_made(own_store,
                                                                         monkeypatch):
    with Memory() as mem:
        monkeypatch.setenv("REFLECT_ESCALATE_AFTER", "1")
        monkeypatch.setenv("REFLECT_OFFLINE", "1")
        for _ in range(3):
            mem.capture(run="r", exit_code=1, error_text=MISSING)
            block = mem.recall(run="r").text
        assert "REPEATED FAILURE" in block and "2x" in block  # escalated after 2, not 1


def test_a_settings_value_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="half_life_days=0"):
        Settings(half_life_days=0)


def test_recall_and_outcome_take_an_absurd_iteration_as_capture_does(own_store, caplog):
    with Memory() as mem:
        mem.capture(run="r", iteration=1, action="python report.py", exit_code=1,
                    error_text=MISSING)
        assert mem.recall(run="r", iteration=2**70).items
        assert mem.outcome(run="r", iteration=2**70, success=True, action="python report.py")
    assert "is not a whole number from 0 to" in caplog.text


def test_a_run_whose_id_the_scrubber_changes_keeps_its_history_for_its_own_module(own_store):
    """The run's earlier steps are asked for by the run id as it is stored: the module an
    earlier step of the run made is the run's own, however the run id is written."""
    with Memory() as mem:
        mem.capture(run=ADDRESSED, action="touch widgets.py && python app.py", exit_code=1,
                    error_text="ValueError: no widgets yet")
        entry = mem.capture(run=ADDRESSED, action="python app.py", exit_code=1,
                            error_text="ModuleNotFoundError: No module named 'widgets'")
        assert entry is not None
        guidance = mem.lesson(entry.lesson_id).guidance
        assert "run's own code" in guidance and "pip install" not in guidance


def test_a_memory_given_a_store_url_is_the_store_its_doctor_examines(own_store):
    """The doctor asks the store the Memory was given, not the one of the environment."""
    with Memory(store_url="postgresql://agent@127.0.0.1:9/reflect") as mem:
        findings = {f.what: f for f in mem.doctor()}
    assert findings["store"].ok is False and "127.0.0.1:9" in findings["store"].text


def test_the_context_a_detached_worker_is_given_is_the_callers(own_store, monkeypatch):
    monkeypatch.setenv("REFLECT_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("REFLECT_MAX_COST_USD", "0.5")
    given = RunContext.from_env(os.environ, run=ADDRESSED, embeddings="hash",
                                settings=Settings(max_failures=77, holdout=0.25))
    again = RunContext.from_env(given.environ())
    assert again == given
    assert (again.run, again.model and again.model.max_cost_usd) == (given.run, 0.5)
    assert again.settings.max_failures == 77 and "alice" not in again.run


def test_nothing_below_the_boundary_reads_the_environment(own_store, monkeypatch):
    """A Memory made with a context does what the context says, whatever the process's
    environment says after it was made."""
    context = RunContext.from_env({"REFLECT_HOME": str(own_store), "REFLECT_RUN": "given"})
    monkeypatch.setenv("REFLECT_FAILURE_MEMORY", "0")
    monkeypatch.setenv("REFLECT_RUN", "elsewhere")
    with Memory(context=context) as mem:
        entry = mem.capture(exit_code=1, error_text="ValueError: recorded all the same")
        assert entry is not None and [f.run for f in mem.failures()] == ["given"]


@pytest.mark.parametrize(("variable", "value", "field", "default"), [
    ("REFLECT_MODEL_TIMEOUT", "-1", "timeout", 30.0),
    ("REFLECT_MODEL_TIMEOUT", "nan", "timeout", 30.0),
    ("REFLECT_MAX_COST_USD", "-0.5", "max_cost_usd", None),
    ("REFLECT_MAX_COST_USD", "inf", "max_cost_usd", None),
    ("REFLECT_MAX_CALLS_PER_RUN", "-3", "max_calls_per_run", 50),
])
def test_a_model_setting_out_of_range_is_named_and_its_default_stands(
        own_store, caplog, variable, value, field, default):
    env = {"REFLECT_HOME": str(own_store), "REFLECT_MODEL": "openai/gpt-4o-mini",
           variable: value}
    model = RunContext.from_env(env).model
    assert model is not None and getattr(model, field) == default
    [said] = [r.getMessage() for r in caplog.records if variable in r.getMessage()]
    assert f"{variable}={value!r}" in said and "using" in said


SCRUBS = {"scrub", "scrubbed", "clip"}


def run_scrubbed(tree: ast.AST) -> list[int]:
    """The lines where a run id (a name or attribute ``run``) is scrubbed or cut."""
    def is_run(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "run") or (
            isinstance(node, ast.Attribute) and node.attr == "run")

    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and (getattr(n.func, "attr", None) or getattr(n.func, "id", "")) in SCRUBS
                  and any(is_run(a) for a in n.args))


def test_the_run_id_is_made_as_stored_in_one_place():
    """Above capture, ``reflect.api.context.run_id`` alone makes a run id as capture
    stores it; every other path asks the context (capture itself scrubs every field it
    is given, the run id already in that form)."""
    made = {str(p.relative_to(REPO)): lines for folder in ("api", "recall", "cli",
                                                           "integrations")
            for p in (REPO / "reflect" / folder).rglob("*.py")
            if (lines := run_scrubbed(ast.parse(p.read_text())))}
    assert made.keys() == {"reflect/api/context.py"}
    assert run_scrubbed(ast.parse("row = {'run': scrub(run)}\nclip(mem.run, 9)")) == [1, 2]
