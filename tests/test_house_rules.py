"""HOUSE RULES: what most earlier runs of this scope hit, shown before a run's first
iteration, every word true of what it counts (the wordings here were each read in a block
that said more than its count held)."""

import os
import subprocess
import sys

import pytest

from reflect import Memory, Settings
from reflect.recall.predict import Predictor
from reflect.recall.render import HOUSE_HEADER
from reflect.recall.worked import rewrote_its_script

NO_PYTEST = "ModuleNotFoundError: No module named 'pytest'"
FIX = "pip install -e ."  # what each run did before its failed command passed


def module(name: str) -> str:
    return f"ModuleNotFoundError: No module named '{name}'"


def undefined(name: str) -> str:
    return ('Traceback (most recent call last):\n  File "x.py", line 3\n'
            f"NameError: name '{name}' is not defined")


def runs(mem: Memory, errors: list[str], prefix: str = "r", fix: str = "",
         action: str = "python check.py", rerun: str = "") -> None:
    """One run per error, each failing ``action`` once; then, when given, ``fix`` and
    ``action`` again passing, or ``rerun`` passing."""
    for i, error in enumerate(errors):
        run = f"{prefix}{i}"
        mem.recall(run=run, goal="a task", iteration=1)
        mem.capture(run=run, iteration=1, action=action, exit_code=1, error_text=error)
        if fix:
            mem.outcome(run=run, iteration=2, success=True, action=fix.format(i=i))
        if fix or rerun:
            mem.outcome(run=run, iteration=3, success=True, action=rerun or action)


def house(mem: Memory, run: str = "new") -> list[str]:
    rec = mem.recall(run=run, goal="a task", iteration=1)
    assert not rec.items or rec.text.startswith(HOUSE_HEADER), rec.text
    return [i.text for i in rec.items if i.section == "lesson"]


def test_the_house_rules_come_first_under_their_own_header_with_the_runs_they_are_from():
    with Memory() as mem:
        runs(mem, [NO_PYTEST] * 4)
        rec = mem.recall(run="new", goal="a task", iteration=1)
    assert rec.text.splitlines()[0] == "HOUSE RULES (from 4 earlier runs):"
    assert "in 4 of the last 4 runs" in rec.text


def test_a_family_count_is_never_shown_beside_one_cause_s_name():
    # 6 runs missed some module, one of them 'pytest': "in 6 of 6 … 'pytest'" would lie.
    with Memory() as mem:
        runs(mem, [module(m) for m in ("pytest", "numpy", "yaml", "six", "attr", "toml")])
        (text,) = house(mem)
    assert "in 6 of the last 6 runs" in text
    for name in ("pytest", "numpy", "yaml", "six", "attr", "toml"):
        assert name not in text, text


def test_a_mistake_its_runs_got_past_by_editing_the_code_under_work_is_no_house_rule():
    # "when python fails with NameError: name 'MY_MOD' …": each run's check red until its
    # edit of the code under repair made it green is that run's progress, not a mistake.
    with Memory() as mem:
        runs(mem, [undefined(n) for n in ("MY_MOD", "other_name", "third_one")],
             fix="sed -i 's/x{i}/y/' f.py")
        assert house(mem) == []


def test_a_fix_that_edited_the_code_under_work_beside_a_script_of_its_own_is_the_work(tmp_path):
    # A run that ran a helper of its own, then edited the code under repair, got past its
    # check by the edit: progress, whatever else it ran. One that also installed did not.
    def fixed(mem: Memory, prefix: str, install: str) -> None:
        for i, name in enumerate(("MY_MOD", "other_name", "third_one")):
            run = f"{prefix}{i}"
            mem.recall(run=run, goal="a task", iteration=1)
            mem.capture(run=run, iteration=1, action="python check.py", exit_code=1,
                        error_text=undefined(name))
            steps = [install, "python apply_fix.py", f"sed -i 's/x{i}/y/' lib/base.py",
                     "python check.py"]
            for n, step in enumerate(filter(None, steps), 2):
                mem.outcome(run=run, iteration=n, success=True, action=step)

    with Memory(home=tmp_path / "edited") as mem:
        fixed(mem, "r", install="")
        assert house(mem) == []
    with Memory(home=tmp_path / "installed") as mem:
        fixed(mem, "r", install="pip install six")
        (text,) = house(mem)
    assert "NameError" in text, text


def test_a_slip_s_fix_that_edited_the_code_under_work_is_not_told_its_hint_is():
    # Each run broke a line of its own code and deleted it: "What worked in 3 of the 3
    # runs: `sed -i '14d' lib/base.py`" would tell one run's line as the fix of all three.
    # The slip is still a house rule, saying what to do about it in general.
    syntax = ('  File "/repo/lib/base.py", line {n}\n    def f(:\n          ^\n'
              "SyntaxError: invalid syntax")
    with Memory() as mem:
        for i, n in enumerate((12, 14, 40)):
            run = f"r{i}"
            mem.recall(run=run, goal="a task", iteration=1)
            mem.capture(run=run, iteration=1, action="python check.py", exit_code=1,
                        error_text=syntax.format(n=n))
            mem.outcome(run=run, iteration=2, success=True, action=f"sed -i '{n}d' lib/base.py")
            mem.outcome(run=run, iteration=3, success=True, action="python check.py")
        (text,) = house(mem)
    assert "SyntaxError" in text and "Hint: " in text, text
    assert "What worked" not in text and "lib/base.py" not in text, text


def test_a_fix_that_wrote_a_file_of_the_run_s_own_is_still_told():
    # A module the run's script imports, made by the run: no code under work was edited.
    with Memory() as mem:
        runs(mem, [module("helpers")] * 3, fix="mkdir helpers && touch helpers/__init__.py")
        (text,) = house(mem)
    assert "What worked in 3 of the 3 runs that hit it: `mkdir" in text, text


def test_a_test_red_on_the_code_under_repair_is_no_house_rule():
    with Memory() as mem:
        for i in range(4):
            mem.recall(run=f"r{i}", goal="a task", iteration=1)
            mem.capture(run=f"r{i}", iteration=1, action="pytest tests/test_perms.py",
                        exit_code=1, error_text="AssertionError: PermissionError not raised")
        assert house(mem) == []


def test_a_family_s_fix_is_told_at_the_family_s_level_with_its_count():
    # Each run installed the module it missed: one fix, with each run's module masked.
    with Memory() as mem:
        for i, name in enumerate(("yaml", "six", "toml")):
            run = f"r{i}"
            mem.recall(run=run, goal="a task", iteration=1)
            mem.capture(run=run, iteration=1, action="python check.py", exit_code=1,
                        error_text=module(name))
            mem.outcome(run=run, iteration=2, success=True, action=f"pip install {name}")
            mem.outcome(run=run, iteration=3, success=True, action="python check.py")
        (text,) = house(mem)
    assert ("What worked in 3 of the 3 runs that hit it: `pip install <name>`, then"
            " `python check.py` passed") in text, text
    assert not any(name in text for name in ("yaml", "six", "toml")), text


def test_a_family_s_fix_is_one_for_the_kind_of_failure_it_shows():
    # Three runs made the app their script named (the run's own module); then two missed
    # pytest and installed it. "No module named ..." is one family, but a missing package
    # is no module to make: "`mkdir <name> && touch <name>/__init__.py`" was told for it.
    with Memory() as mem:
        for i in range(3):
            run = f"app{i}"
            mem.recall(run=run, goal="a task", iteration=1)
            mem.outcome(run=run, iteration=1, success=True,
                        action="cat <<'EOF' > repro.py\napp_label = 'repro_app'\nEOF")
            mem.capture(run=run, iteration=2, action="python repro.py", exit_code=1,
                        error_text=module("repro_app"))
            mem.outcome(run=run, iteration=3, success=True,
                        action="mkdir repro_app && touch repro_app/__init__.py")
            mem.outcome(run=run, iteration=4, success=True, action="python repro.py")
        runs(mem, [module("pytest")] * 2, prefix="p", fix="pip install pytest")
        (text,) = house(mem)
    assert "What worked in 2 of the 2 runs that hit it: `pip install <name>`" in text, text
    assert "mkdir" not in text, text


def test_a_family_s_fix_is_never_a_rerun_of_one_cause_s_module():
    # Two runs got past "No module named 'pytest'" by `python3 -m pytest` alone: masked, that
    # read "`python3 -m <name> tests/test_a.py` passed", for a family of other modules too.
    with Memory() as mem:
        tests = "python -m pytest tests/test_a.py"
        runs(mem, [module("pytest")] * 2, action=tests, rerun="python3 -m pytest tests/test_a.py")
        runs(mem, [module("yaml"), module("six")], prefix="u", action=tests)
        text = "\n".join(house(mem))
    assert "<name> tests" not in text and "What worked" not in text, text


def test_a_fix_that_only_rewrote_its_script_comes_after_the_hint():
    # "What worked: `cat <<'EOF' > repro.py`, then `python repro.py` passed": the body that
    # changed is never shown, so the hint says what it may have done.
    with Memory() as mem:
        runs(mem, ["django.db.utils.OperationalError: no such table: auth_user"] * 3,
             action="python repro.py",
             rerun="cat <<'EOF' > repro.py\ncall_command('migrate')\nEOF\npython repro.py")
        (text,) = house(mem)
    hint, worked = text.splitlines()[1:]
    assert hint.strip().startswith("Hint: Table `auth_user` does not exist yet: run the"
                                   " migrations first"), text
    assert worked.strip() == ("What worked in 3 of the 3 runs that hit it:"
                              " `cat <<'EOF' > repro.py ; python repro.py` passed"), text


@pytest.mark.parametrize(("fix", "rewrote"), [
    ("`cat <<'EOF' > repro.py`, then `python repro.py` passed", True),
    ("`cat <<'EOF' > repro.py ; python3 repro.py` passed", True),
    ("`sed -i 's/a/b/' repro.py`, then `python repro.py` passed", True),
    ("`pip install six`; `cat <<'EOF' > repro.py`, then `python repro.py` passed", False),
    ("`cat <<'EOF' > other.py`, then `python repro.py` passed", False),
    ("`python repro.py` passed", False),
    ("` `, then `python repro.py` passed", False),
])
def test_a_fix_that_only_rewrote_its_script_is_told_apart(fix, rewrote):
    assert rewrote_its_script(fix) is rewrote


def test_a_fix_that_worked_in_more_than_one_run_is_shown_with_its_count():
    with Memory() as mem:
        runs(mem, [NO_PYTEST] * 3, fix="pip install pytest")
        runs(mem, [NO_PYTEST], prefix="unfixed")
        (text,) = house(mem)
    assert ("What worked in 3 of the 4 runs that hit it: `pip install pytest`, then"
            " `python check.py` passed") in text, text


def test_a_rule_with_nothing_to_say_is_no_house_rule():
    # "in 5 of the last 5 runs: on ValueError: …" and nothing to do: not worth a place.
    with Memory() as mem:
        runs(mem, ["ValueError: the bleach package is required"] * 5)
        assert house(mem) == []


def test_a_family_s_hint_masks_each_cause_s_name_beside_python_s_suggestion():
    # "name 'nei' is not defined. Did you mean: 'ne'?": the suggestion is no part of the
    # family, and each run's name is masked in the hint they share.
    with Memory() as mem:
        runs(mem, [undefined(n) + f". Did you mean: '{n[:-1]}'?" for n in ("nei", "lst", "vals")])
        (text,) = house(mem)
    assert "Hint: Define or import `<name>` before it is used" in text, text
    assert not any(name in text for name in ("nei", "lst", "vals")), text


def test_a_lesson_of_one_earlier_run_is_no_house_rule():
    # "in 1 of 1 earlier runs: ValueError: …" after one run
    with Memory() as mem:
        runs(mem, ["ValueError: bleach package is required"])
        assert house(mem) == []


def test_no_conditional_is_shown_as_a_reason():
    # "came next in 4 of 58 runs": a 7% conditional shown as a reason
    with Memory() as mem:
        for i in range(6):
            run = f"r{i}"
            mem.recall(run=run, goal="a task", iteration=1)
            mem.capture(run=run, iteration=1, action="python a.py", exit_code=1,
                        error_text=NO_PYTEST)
            mem.capture(run=run, iteration=2, action="python b.py", exit_code=1,
                        error_text="OperationalError: no such table: auth_user")
        mem.recall(run="new", goal="a task", iteration=1)
        mem.capture(run="new", iteration=1, action="python a.py", exit_code=1,
                    error_text=NO_PYTEST)
        rec = mem.recall(run="new", goal="a task", iteration=2)
    assert "came next" not in rec.text and "no such table" in rec.text


def test_a_count_in_a_shared_store_is_of_this_project_s_runs(tmp_path):
    # "in 30 of 30 earlier runs" when 1 of 30 of this project's runs had it: a store-wide
    # count over this scope's runs.
    home = tmp_path / "store"
    with Memory(home=home) as mem:
        mem.scope = "other"
        runs(mem, [module("numpy")] * 5, prefix="o")
        mem.scope = "mine"
        runs(mem, [NO_PYTEST] * 2 + ["KeyError: 'a'"] * 3, prefix="m")
        rec = mem.recall(run="new", goal="a task", iteration=1)
    assert rec.text.startswith("HOUSE RULES (from 5 earlier runs of this project):"), rec.text
    assert "in 2 of the last 5 runs of this project" in rec.text, rec.text
    assert "of 5 earlier runs:" not in rec.text and "in 7 of" not in rec.text


def test_the_house_rules_are_chosen_by_expected_value_and_at_most_six():
    # nine kinds of mistake, each in 5 of 45 runs; one more in 2 runs long ago
    with Memory() as mem:
        runs(mem, ["RareError: once in a while"] * 2, prefix="old", fix=FIX)
        runs(mem, [f"E{i % 9}Error: boom" for i in range(45)], fix=FIX)
        rules = house(mem)
    assert len(rules) == 6 and not any("RareError" in text for text in rules)


def test_a_rule_the_run_hit_gives_its_place_to_the_next_likely_one():
    # A in 6 runs, B in 5, C in 4; two places: A and B, and after the run hits A (the
    # recent section shows it now) B and C: the place A held is not left empty.
    with Memory(settings=Settings(predictor=Predictor(max_items=2))) as mem:
        runs(mem, ["AError: a"] * 6 + ["BError: b"] * 5 + ["CError: c"] * 4, fix=FIX)
        first = house(mem)
        mem.capture(run="new", iteration=1, action="python check.py", exit_code=1,
                    error_text="AError: a")
        later = [i.text for i in mem.recall(run="new", goal="a task", iteration=2).items
                 if i.section == "lesson"]
    assert [("AError" in t, "BError" in t) for t in first] == [(True, False), (False, True)]
    assert [("BError" in t, "CError" in t) for t in later] == [(True, False), (False, True)]


def test_a_client_that_keeps_its_history_is_told_only_what_is_new_under_its_header():
    from reflect.integrations.shown import unseen

    with Memory() as mem:
        runs(mem, ["AError: a"] * 3 + ["BError: b"] * 3, fix=FIX)
        shown: set[str] = set()
        first, digests = unseen(mem.recall(run="new", goal="a task", iteration=1), shown)
        shown.update(digests)
        mem.capture(run="new", iteration=1, action="python check.py", exit_code=1,
                    error_text="CError: c")
        again, _ = unseen(mem.recall(run="new", goal="a task", iteration=2), shown)
    assert first.startswith("HOUSE RULES (from 6 earlier runs):") and "AError" in first
    assert again.startswith("PAST FAILURES TO AVOID:") and "CError" in again
    assert "AError" not in again and "HOUSE RULES" not in again


def test_a_rule_the_latest_runs_hit_once_is_counted_over_the_longer_window():
    with Memory() as mem:
        runs(mem, ["AError: a"] * 10, prefix="a", fix=FIX)
        runs(mem, ["BError: b"] * 24 + ["AError: a"], prefix="b", fix=FIX)
        rules = house(mem)
    (text,) = [t for t in rules if "AError" in t]
    assert "in 11 of the last 35 runs" in text and "in 1 of" not in text, text


TIED = '''
import sys, tempfile
from reflect import Memory
errors = ["NameError: name 'x' is not defined", "KeyError: 'k'", "TypeError: bad operand",
          "ValueError: bad value", "ZeroDivisionError: division by zero",
          "AttributeError: 'A' object has no attribute 'b'"]
with tempfile.TemporaryDirectory() as home, Memory(home=home) as mem:
    for i, error in enumerate(errors * 2):  # six causes, each in two of twelve runs
        mem.capture(run=f"r{i}", iteration=1, action="python check.py", exit_code=1,
                    error_text=error)
        mem.outcome(run=f"r{i}", iteration=2, success=True, action="pip install -e .")
        mem.outcome(run=f"r{i}", iteration=3, success=True, action="python check.py")
    rec = mem.recall(run="new", goal="a task", iteration=1)
    sys.stdout.write(" ".join(i.fingerprint for i in rec.items if i.section == "lesson"))
'''


def test_equally_likely_rules_come_in_the_same_order_in_every_process():
    # A harness that calls `reflect recall` each iteration starts a process each time, and
    # each hashes strings with its own seed: the rules shown must not change with it.
    shown = {subprocess.run([sys.executable, "-c", TIED], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
             for seed in ("1", "2", "3")}
    assert len(shown) == 1 and len(shown.pop().split()) >= 4, shown
