"""Reading a command line: its short form, the command whose status it returns, its key."""

import pytest

from reflect.capture import commands
from reflect.capture.benign import EXITS, benign

HEREDOC = "cat <<'EOF' > repro.py\nimport django\nSECRET_BODY = 1\nEOF\npython repro.py"


def test_brief_elides_heredoc_bodies_long_arguments_and_interpreter_paths():
    assert commands.brief(HEREDOC) == "cat <<'EOF' > repro.py ; python repro.py"
    long = commands.brief("python -c " + "x" * 80)
    assert len(long.split()[-1]) == commands.MAX_ARG and long.endswith("…")
    assert commands.brief("/work/.venv/bin/python -m pytest -q").startswith("python -m")
    assert len(commands.brief("echo " + "word " * 100)) <= commands.MAX_BRIEF


@pytest.mark.parametrize(("action", "key"), [
    ("cd /testbed && python -m pytest tests/test_x.py -q", ("pytest", "tests/test_x.py")),
    ("pytest tests/test_x.py", ("pytest", "tests/test_x.py")),
    ("python3 repro.py", ("python", "repro.py")),
    (HEREDOC, ("python", "repro.py")),
    ("FOO=1 sudo ./deploy.sh --fast", ("deploy.sh", "")),
    ("git diff --exit-code src", ("git diff", "src")),
    ("", ("", "")),
])
def test_the_key_is_the_main_commands_program_and_target(action, key):
    assert commands.key(action) == key


@pytest.mark.parametrize(("action", "code", "text", "program"), [
    ('grep -n "def foo" app.py', 1, "", "grep"),
    ("nl -ba x.py | sed -n 1,9p | grep def", 1, "", "grep"),  # the pipeline's last command
    ("grep -q x f && echo found", 1, "", ""),  # either step may have failed: not benign
    ("grep x missing.py", 2, "", ""),  # 2 is grep's error
    ("grep x f", 1, "grep: f: No such file or directory", ""),  # it printed why
    ("git diff --exit-code", 1, "", "git diff"),
    ("git diff", 1, "", ""),  # without --exit-code its 1 is an error
    ("[ -f setup.py ]", 1, "", "["),
    ("python repro.py", 1, "", ""),
    ("grep x f", None, "", ""),
    ("pylint src", 16, "src/a.py:1:0: C0114: Missing module docstring", "pylint"),
    ("pylint src", 1, "", ""),  # pylint's 1 is a crash, printed or not
])
def test_benign_exits(action, code, text, program):
    assert benign(action, code, text, EXITS) == program


def test_brief_leaves_out_comment_lines():
    assert commands.brief("# make the script\ncat <<'EOF' > r.py\nx\nEOF\npython r.py") == (
        "cat <<'EOF' > r.py ; python r.py")


@pytest.mark.parametrize(("action", "looks"), [
    ("ls -la", True), ("nl -ba x.py | sed -n '1,9p'", True), ("grep -in x y.py 2>&1", True),
    ("cd /repo && git diff", True), ("cat a.py >/dev/null", True),
    ("sed -i 's/a/b/' a.py", False), ("/bin/sed --in-place=.bak 's/a/b/' a.py", False),
    ("cat <<'EOF' > a.py\nprint(1)\nEOF", False), ("echo x >> notes.txt", False),
    ("find . -name '*.pyc' -delete", False), ("python x.py", False), ("", False),
    ("pytest --version", True), ("python -m pytest -h", True), ("python3 -V", True),
    ("pytest -x --version", False),  # a flag of its own: it may run the tests
])
def test_a_line_that_only_looks_changes_nothing(action, looks):
    assert commands.inspects(action) is looks


@pytest.mark.parametrize(("action", "kind"), [
    ("cd /testbed && python reproduce.py 2>&1 | head -20", "reproduce.py"),
    ("python -m pytest tests/test_x.py -q", "pytest"),
    ("A=1 timeout 30 pytest -x", "pytest"),  # a wrapper's own arguments are not the program
    ("nice -n 5 make", "make"),
    ('(cd x && python3 -c "print(1)")', "python -c"),
    (HEREDOC, "repro.py"),  # the heredoc's step writes what the next one runs
    ("/usr/bin/python3 ./tests/runtests.py admin_views", "runtests.py"),
    ("sed -i 's/a/b/' f.py && python t.py", "sed"),
    ("git diff --exit-code", "git diff"),
    ("echo done", ""),
    ("", ""),
])
def test_the_kind_of_a_command_is_its_first_working_step_s_program_or_script(action, kind):
    assert commands.kind(action) == kind


@pytest.mark.parametrize(("action", "shown"), [
    ("python3 report.py", "python3"), ("cd /repo && /usr/bin/python3.12 -c 'x'", "python3.12"),
    ("python -m pytest -x", "pytest"), ("bin/test --fast", "bin/test"), ("make check", "make"),
])
def test_a_program_is_shown_as_the_run_wrote_it(action, shown):
    assert commands.shown_program(action) == shown
