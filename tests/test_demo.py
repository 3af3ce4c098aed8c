"""`make demo`: the scripted agent loop that the README quotes, run as `make demo` runs it."""

import subprocess
import sys

from reflect.cli import demo


def test_memory_off_never_solves_it_and_memory_on_names_the_fixes():
    out = subprocess.run([sys.executable, "-m", "reflect.cli.demo"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    off, on = out.split("===== memory on =====")
    assert "PAST FAILURES" not in off and off.count("--- iteration") == demo.MAX_ITERATIONS
    # the block names each fix, the agent carries them out, and the task is done
    hints = [line for line in on.splitlines() if line.startswith("  |   Hint: ")]
    assert any("`pip install pyyaml`" in h for h in hints)
    assert any("`config.yaml`" in h for h in hints)
    assert "$ touch config.yaml && pip install pyyaml && python report.py" in on
    assert out.endswith("===== iterations to success =====\n"
                        f"  memory off  not solved in {demo.MAX_ITERATIONS}\n"
                        "  memory on   3\n")


def test_the_sandbox_fails_until_both_fixes_are_made():
    box = demo.Sandbox()
    assert box.run("python report.py")[1].endswith("No module named 'yaml'")
    assert box.run("pip install yaml")[0] == 1  # the wrong name, as agents guess it
    assert box.run("pip install -r requirements.txt")[0] == 1
    assert box.run("pip install pyyaml && python report.py")[1].endswith("'config.yaml'")
    assert box.run("cat config.yaml")[0] == 127
    assert box.run("touch config.yaml && python report.py") == (0, "weekly report: 42 tasks done")
