import dataclasses
import traceback

import pytest

from reflect.capture.extract import Extracted, extract_exception, extract_text
from reflect.capture.fingerprint import fingerprint

CHAINED = """\
Traceback (most recent call last):
  File "/srv/app/db.py", line 10, in connect
    return sqlite3.connect(path)
sqlite3.OperationalError: unable to open database file

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/app/main.py", line 4, in <module>
    run()
  File "/srv/app/main.py", line 2, in run
    connect()
  File "/srv/app/db.py", line 12, in connect
    raise ConfigError("bad database path") from None
app.errors.ConfigError: bad database path

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/srv/app/cli.py", line 30, in main
    start()
  File "/srv/app/cli.py", line 22, in start
    raise SystemExit("cannot start") from exc
SystemExit: cannot start
"""


def test_chained_traceback_reports_the_last_exception():
    found = extract_text(CHAINED)
    assert found == Extracted("SystemExit", "cannot start", ("cli.py:main", "cli.py:start"))
    assert found.signature == "cli.py:main > cli.py:start"


def test_dotted_exception_keeps_the_last_component():
    text = """\
Traceback (most recent call last):
  File "/testbed/repro.py", line 9, in <module>
    Book.objects.create(title="x")
  File "/testbed/django/db/backends/sqlite3/base.py", line 328, in execute
    return super().execute(query, params)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
django.db.utils.OperationalError: no such table: app_book
"""
    found = extract_text(text)
    assert found.error_type == "OperationalError"
    assert found.message == "no such table: app_book"
    assert found.frames == ("repro.py:<module>", "base.py:execute")


def test_syntax_error_location_is_not_a_call_frame():
    text = """\
Traceback (most recent call last):
  File "/testbed/reproduce.py", line 4, in <module>
    from django.core.management.base import BaseCommand
  File "/testbed/django/core/management/base.py", line 73
    def add_subparsers(self, **kwargs):
    ^
IndentationError: expected an indented block after 'else' statement on line 71
"""
    found = extract_text(text)
    assert found.error_type == "IndentationError"
    assert found.message == "expected an indented block after 'else' statement on line 71"
    assert found.frames == ("reproduce.py:<module>",)


def test_syntax_error_without_traceback_header():
    text = (
        '  File "<string>", line 1\n    class A: pass; class B: pass\n'
        "                   ^\nSyntaxError: invalid syntax\n"
    )
    assert extract_text(text) == Extracted("SyntaxError", "invalid syntax")


def test_bare_exception_takes_the_failing_source_line_as_message():
    text = """\
Traceback (most recent call last):
  File "/testbed/test_mock_user.py", line 87, in <module>
    assert user.username == 'testuser'
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^
AssertionError
User fetched: AnonymousUser
"""
    found = extract_text(text)
    assert found.error_type == "AssertionError"
    assert found.message == "assert user.username == 'testuser'"


def test_frames_keep_the_five_innermost():
    frames = "".join(f'  File "/a/m{i}.py", line {i}, in f{i}\n    f{i + 1}()\n' for i in range(9))
    found = extract_text(f"Traceback (most recent call last):\n{frames}RecursionError: deep\n")
    assert found.frames == ("m4.py:f4", "m5.py:f5", "m6.py:f6", "m7.py:f7", "m8.py:f8")


PYTEST = """\
============================= test session starts ==============================
collected 3 items

tests/test_iers.py F.F                                                     [100%]

=================================== FAILURES ===================================
_________________________________ test_cirs __________________________________

    def test_cirs():
>       frame.transform_to(CIRS())

tests/test_iers.py:49:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
astropy/coordinates/baseframe.py:1202: in transform_to
    return trans(self, new_frame)
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

    def mjd_utc(self, jd1, jd2=0.):
>       mjd = np.floor(jd1 - MJD_ZERO + jd2)
E       TypeError: unsupported operand type(s) for -: 'Time' and 'float'

astropy/utils/iers/iers.py:271: TypeError
_________________________________ test_level _________________________________

    def test_level(caplog):
>       assert caplog.handler.level == 0
E       assert 42 == 0
E        +  where 42 = <LogCaptureHandler (Level 42)>.level

tests/test_iers.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_iers.py::test_cirs - TypeError: unsupported operand type(s) for -: 'Ti...
FAILED tests/test_iers.py::test_level - assert 42 == 0
========================= 2 failed, 1 passed in 0.31s ==========================
"""


def test_pytest_reports_the_last_failure_with_its_frames():
    found = extract_text(PYTEST)
    assert found == Extracted("AssertionError", "assert 42 == 0", ("test_iers.py:test_level",))


def test_pytest_long_traceback_names_functions_from_their_source():
    first_failure = PYTEST.split("_____ test_level")[0] + "=== 1 failed in 0.2s ===\n"
    found = extract_text(first_failure)
    assert found.error_type == "TypeError"
    assert found.message == "unsupported operand type(s) for -: 'Time' and 'float'"
    assert found.frames == (
        "test_iers.py:test_cirs",
        "baseframe.py:transform_to",
        "iers.py:mjd_utc",
    )


def test_pytest_summary_alone():
    text = """\
=========================== short test summary info ============================
FAILED tests/test_x.py::TestQuantity::test_scatter[agg] - NotImplementedError: cannot ev...
ERROR tests/test_y.py - ModuleNotFoundError: No module named 'matplotlib'
========================= 1 failed, 1 error in 2.08s ===========================
"""
    found = extract_text(text)
    assert found == Extracted(
        "ModuleNotFoundError", "No module named 'matplotlib'", ("test_y.py:<module>",)
    )
    first = extract_text(text.replace("ERROR tests/test_y.py", "tests/test_y.py"))
    assert first == Extracted("NotImplementedError", "cannot ev", ("test_x.py:test_scatter",))


def test_pytest_e_line_with_message_on_the_next_line():
    text = (
        "E           AssertionError: \nE           Not equal to tolerance rtol=1e-07\n\n"
        "lib/contextlib.py:79: AssertionError\n"
    )
    found = extract_text(text)
    assert found.error_type == "AssertionError"
    assert found.message == "Not equal to tolerance rtol=1e-07"


def test_typescript():
    text = (
        "src/app.ts(12,5): error TS2304: Cannot find name 'foo'.\n"
        "src/app.ts(20,1): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "Found 2 errors.\n"
    )
    assert extract_text(text) == Extracted("TS2304", "Cannot find name 'foo'.")


def test_node_type_error_with_frames_innermost_last():
    text = """\
/app/index.js:3
  foo();
  ^

TypeError: foo is not a function
    at Object.<anonymous> (/app/index.js:3:3)
    at Module._compile (node:internal/modules/cjs/loader:1256:14)
    at node:internal/main/run_main_module:23:47

Node.js v18.17.0
"""
    found = extract_text(text)
    assert found.error_type == "TypeError"
    assert found.message == "foo is not a function"
    assert found.frames == (
        "run_main_module:<anonymous>",
        "loader:Module._compile",
        "index.js:Object.<anonymous>",
    )


def test_node_cannot_find_module():
    text = """\
Error: Cannot find module 'express'
Require stack:
- /app/server.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15)
    at Object.<anonymous> (/app/server.js:1:17) {
  code: 'MODULE_NOT_FOUND'
}

Node.js v18.17.0
"""
    found = extract_text(text)
    assert (found.error_type, found.message) == ("Error", "Cannot find module 'express'")
    assert found.frames == ("server.js:Object.<anonymous>", "loader:Module._resolveFilename")


@pytest.mark.parametrize(
    "text",
    [
        "bash: foo: command not found",
        "bash: line 1: foo: command not found",
        "sh: 1: foo: not found",
        "/bin/sh: 1: foo: not found",
        "zsh: command not found: foo",
        "foo: command not found",  # `reflect run -- foo`
    ],
)
def test_command_not_found_reads_the_same_in_every_shell(text):
    assert extract_text(text + "\n") == Extracted("CommandNotFound", "foo: command not found")


def test_missing_file_and_permission_denied():
    text = "rm: cannot remove 'a.py': No such file or directory\n"
    assert extract_text(text) == Extracted("FileNotFound", text.strip())
    assert extract_text("bash: ./run.sh: Permission denied") == Extracted(
        "PermissionDenied", "bash: ./run.sh: Permission denied"
    )


def test_python_exception_wins_over_shell_pattern_on_the_same_line():
    text = "FileNotFoundError: [Errno 2] No such file or directory: 'cfg.toml'\n"
    assert extract_text(text).error_type == "FileNotFoundError"


def test_python_m_missing_module_reads_like_the_traceback():
    assert extract_text("/usr/bin/python3: No module named pytest\n") == Extracted(
        "ModuleNotFoundError", "No module named 'pytest'"
    )


def test_gcc_first_error_of_a_run_is_the_cause():
    text = """\
main.c: In function 'main':
main.c:3:5: error: 'y' undeclared (first use in this function)
    3 |     y = 1;
      |     ^
main.c:3:5: note: each undeclared identifier is reported only once
main.c:4:1: error: expected ';' before '}' token
make: *** [Makefile:2: all] Error 1
"""
    assert extract_text(text) == Extracted(
        "CompileError", "'y' undeclared (first use in this function)"
    )


def test_rustc_error_code_is_the_type_and_summaries_are_skipped():
    text = """\
   Compiling demo v0.1.0 (/work/demo)
error[E0425]: cannot find value `y` in this scope
 --> src/main.rs:2:20
  |
2 |     println!("{}", y);
  |                    ^ not found in this scope

error: aborting due to 1 previous error

error: could not compile `demo` (bin "demo") due to 1 previous error
"""
    assert extract_text(text) == Extracted("E0425", "cannot find value `y` in this scope")


def test_go_undefined():
    text = "# command-line-arguments\n./main.go:3:2: undefined: y\n./main.go:4:2: undefined: z\n"
    assert extract_text(text) == Extracted("CompileError", "undefined: y")


def test_javac_names_the_missing_symbol():
    text = (
        "Main.java:3: error: cannot find symbol\n        y = 1;\n        ^\n"
        "  symbol:   variable y\n  location: class Main\n1 error\n"
    )
    assert extract_text(text) == Extracted("CompileError", "cannot find symbol: variable y")


def test_judge_style_line_prefix():
    found = extract_text("Line 8: NameError: name 'nums' is not defined. Did you mean: 'dumps'?")
    assert found.error_type == "NameError"
    assert found.message == "name 'nums' is not defined. Did you mean: 'dumps'?"


def test_traceback_is_not_overridden_by_a_later_runner_summary():
    text = """\
Traceback (most recent call last):
  File "/usr/lib/python3.9/unittest/case.py", line 830, in _baseAssertEqual
    raise self.failureException(msg)
AssertionError: 10 != 9

----------------------------------------------------------------------
Ran 116 tests in 0.161s

FAILED (failures=1)
Destroying test database for alias 'default'...
"""
    assert extract_text(text) == Extracted(
        "AssertionError", "10 != 9", ("case.py:_baseAssertEqual",)
    )


def test_a_later_error_wins_over_an_earlier_one():
    text = CHAINED + "bash: line 1: psql: command not found\n"
    assert extract_text(text).error_type == "CommandNotFound"


def test_line_mentioning_an_error_beats_trailing_noise():
    text = (
        "usage: manage.py create [-h] name\n"
        "manage.py create: error: the following arguments are required: name\n"
        "Running command: manage.py create\n"
    )
    assert extract_text(text).message.endswith("the following arguments are required: name")


def test_tool_error_prefix_and_colon_continuation():
    found = extract_text("error: pathspec 'x' did not match any file(s) known to git\n")
    assert found == Extracted("Error", "pathspec 'x' did not match any file(s) known to git")
    text = "Running Sphinx v5.1.0\n\nSphinx error:\nBuilder name HTML not registered\n"
    assert extract_text(text).message == "Sphinx error: Builder name HTML not registered"


def test_fallback_is_the_last_meaningful_line():
    text = "step 3\nsomething odd happened here\n[#####     ] 50%\n$\n-----\n\n   \n"
    assert extract_text(text) == Extracted("Error", "something odd happened here")


def test_ansi_colours_are_ignored():
    assert extract_text("\x1b[31mValueError: bad value\x1b[0m\n") == Extracted(
        "ValueError", "bad value"
    )


@pytest.mark.parametrize("text", ["", "   \n\t\n", "\n\n"])
def test_nothing_usable_is_none(text):
    assert extract_text(text) is None


def test_message_is_cut_only_once_scrubbed():
    """Extraction keeps the whole line; the capture scrubs it, then cuts it."""
    from reflect.capture.entry import entry_rows, parse
    from reflect.capture.extract import MAX_MESSAGE
    from reflect.capture.scrub import Scrubber

    text = "ValueError: " + "x" * 5000
    assert len(extract_text(text).message) == 5000
    failure, _ = entry_rows(parse(phase="", exit_code=1, error_text=text), run="r",
                            iteration=1, goal="", action="", scrubber=Scrubber(), scope="g",
                            now=0.0)
    assert len(failure["message"]) == MAX_MESSAGE


def test_huge_junk_input_completes():
    junk = ("x" * 3000 + "\n") * 30 + ("[====>    ] 42%\r" * 2000) + ":1: in " * 9000
    found = extract_text(junk + "\nKeyError: 'token'\n")
    assert found == Extracted("KeyError", "'token'")
    pathological = [
        '  File "' + "a" * 60000,
        "E" + " " * 60000,
        "a:1:" * 16000,
        "    at " + "(" * 30000,
        "error" * 13000 + ":",
        "'" * 64000,
    ]
    for text in pathological:
        found = extract_text(text)
        assert found is None or found.error_type


def test_extract_exception_matches_the_printed_traceback():
    def load(name):
        return {"a": 1}[name]

    try:
        load("missing")
    except KeyError as exc:
        live = extract_exception(exc)
        printed = extract_text(traceback.format_exc())
    assert live == printed
    assert live.error_type == "KeyError" and live.message == "'missing'"
    assert live.frames[-1] == "test_extract.py:load"


def test_extract_exception_uses_the_exception_given_not_its_cause():
    try:
        try:
            raise OSError("disk")
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        found = extract_exception(exc)
    assert (found.error_type, found.message) == ("RuntimeError", "wrapped")


def test_extract_exception_syntax_error_and_bare_exception():
    with pytest.raises(SyntaxError) as info:
        compile("def f(:\n", "snippet.py", "exec")
    assert extract_exception(info.value).message == "invalid syntax"
    try:
        raise ValueError()
    except ValueError as exc:
        found = extract_exception(exc)
    assert found.message == "raise ValueError()"  # the failing line, as in a printed traceback


def test_extract_exception_survives_a_broken_str():
    class Weird(Exception):
        def __str__(self):
            raise RuntimeError("no")

    found = extract_exception(Weird())
    assert found == Extracted("Weird", "")
    assert fingerprint(found.error_type, found.message, found.frames)


def test_signature_is_derived_from_frames():
    found = Extracted("E", "m", ("a.py:f", "b.py:g"))
    assert found.signature == "a.py:f > b.py:g"
    assert dataclasses.replace(found, frames=("c.py:h",)).signature == "c.py:h"


# A test runner that turns warnings into errors (sympy's bin/test): the run's real error is
# reported first, the warnings raised in other tests after it.
WARNINGS_AFTER_ERROR = """\
_____ sympy/printing/tests/test_str.py:test_Float ______
  File "/testbed/sympy/printing/tests/test_str.py", line 12, in test_Float
    assert str(Float("1.0", 3)) == "1.00"
  File "/testbed/sympy/core/numbers.py", line 80, in __new__
    raise ValueError("Name node can't be used with 'False' constant")
ValueError: Name node can't be used with 'False' constant
_____ sympy/printing/tests/test_str.py:test_Dict ______
  File "/testbed/sympy/printing/tests/test_str.py", line 40, in test_Dict
    if isinstance(x, collections.Mapping):
  File "/usr/lib/python3.9/collections/__init__.py", line 62, in __getattr__
    warnings.warn("Using or importing the ABCs from 'collections'")
DeprecationWarning: Using or importing the ABCs from 'collections' is deprecated
/testbed/sympy/core/basic.py:3: DeprecationWarning: Using or importing the ABCs
 tests finished: 40 passed, 2 exceptions, in 1.2 seconds
"""

# unittest: the heading line, then the traceback of a warning raised as an error.
UNITTEST_WARNING = """\
======================================================================
ERROR: test_legacy_encode (sessions_tests.test_legacy.LegacySessionTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/sessions_tests/test_legacy.py", line 12, in test_legacy_encode
    settings.DEFAULT_HASHING_ALGORITHM = "sha1"
  File "/testbed/django/conf/__init__.py", line 200, in __setattr__
    warnings.warn(MSG, RemovedInDjango40Warning)
django.utils.deprecation.RemovedInDjango40Warning: DEFAULT_HASHING_ALGORITHM is deprecated.

FAILED (errors=1)
"""


def test_a_warning_does_not_stand_for_the_failure_when_an_error_is_there():
    found = extract_text(WARNINGS_AFTER_ERROR)
    assert (found.error_type, found.message) == (
        "ValueError", "Name node can't be used with 'False' constant")


def test_a_warning_raised_as_the_only_error_is_the_failure():
    found = extract_text(WARNINGS_AFTER_ERROR.split("_____ sympy/printing/tests/test_str.py:"
                                                    "test_Dict")[1])
    assert found.error_type == "DeprecationWarning"
    # unittest's heading names the test, not the error: the warning below it is the failure.
    found = extract_text(UNITTEST_WARNING)
    assert (found.error_type, found.message) == (
        "RemovedInDjango40Warning", "DEFAULT_HASHING_ALGORITHM is deprecated.")
