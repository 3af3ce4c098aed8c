import json
import re
from functools import cache
from pathlib import Path

import pytest
from conftest import DATA

from reflect.capture.extract import extract_text
from reflect.capture.fingerprint import fingerprint, message_template

# The shared data sets ($REFLECT_DATA, else ../shared/data) are read, never copied; the tests
# that read them take the data_dir fixture, which skips or fails when they are absent.
TRAJS = DATA / "mini-swe-agent" / "trajs"
BENCH = DATA / "debugbench" / "gpt-4-debug-with-traceback"


@pytest.mark.parametrize(
    ("message", "template"),
    [
        ("No module named 'requests'", "No module named 'requests'"),
        ('No module named "requests"', "No module named 'requests'"),
        ("no such table: annotations_publisher", "no such table: annotations_publisher"),
        (
            "'Solution' object has no attribute 'concat'",
            "'Solution' object has no attribute 'concat'",
        ),
        ("expected ':'", "expected ':'"),
        ("'(' was never closed", "'(' was never closed"),
        (
            "unterminated string literal (detected at line 57)",
            "unterminated string literal (detected at line <n>)",
        ),
        (
            "takes 1 positional argument but 2 were given",
            "takes <n> positional argument but <n> were given",
        ),
        (
            "invalid literal for int() with base 10: 'twelve apples'",
            "invalid literal for int() with base <n>: <str>",
        ),
        (
            "cat: tests/serializers/models.py: No such file or directory",
            "cat: <path>: No such file or directory",
        ),
        (
            "can't open file '/testbed/apply_fix_v5.py': [Errno 2] No such file or directory",
            "can't open file <path>: [Errno <n>] No such file or directory",
        ),
        (
            "rm: cannot remove 'lib/ticker.py.bak': No such file",
            "rm: cannot remove <path>: No such file",
        ),
        ("<Handler object at 0x715d92b8e7f0>", "<Handler object at <hex>>"),
        ("session 83d4458b0c53f7c0f6260add6d39c1362b126d28 expired", "session <hex> expired"),
        ("run 123e4567-e89b-12d3-a456-426614174000 failed", "run <uuid> failed"),
        ("GET https://example.com/a?b=1 timed out", "GET <url> timed out"),
        ("name 'nums' is not defined. Did you mean: 'dumps'?", "name 'nums' is not defined"),
        ("  two\n  lines\tand   spaces ", "two lines and spaces"),
        ("name 'Math' is not defined", "name 'Math' is not defined"),
        ("and/or python3 utf8 v2 E0425", "and/or python3 utf8 v2 E0425"),
    ],
)
def test_message_template(message, template):
    assert message_template(message) == template


def test_fingerprint_shape_and_inputs():
    fp = fingerprint("ValueError", "bad value 3", ["a.py:f"])
    assert re.fullmatch(r"[0-9a-f]{16}", fp)
    assert fp == fingerprint("pkg.errors.ValueError", "bad value 7", ("a.py:f",))
    assert fp != fingerprint("TypeError", "bad value 3", ["a.py:f"])
    assert fp != fingerprint("ValueError", "bad value 3", ["b.py:f"])
    assert fp != fingerprint("ValueError", "bad value 3")


def test_only_the_three_innermost_frames_count():
    inner = ["c.py:h", "d.py:i", "e.py:j"]
    assert fingerprint("E", "m", ["a.py:f", *inner]) == fingerprint("E", "m", ["z.py:q", *inner])
    assert fingerprint("E", "m", inner) != fingerprint("E", "m", inner[::-1])



def test_a_missing_modules_last_line_alone_is_the_traceback_forms_cause():
    """`record_failure` given the last line only is the failure the traceback was."""
    bare = "ModuleNotFoundError: No module named 'yaml'"
    traceback = ('Traceback (most recent call last):\n  File "/srv/app/report.py", line 3, '
                 "in <module>\n    import yaml\n" + bare + "\n")
    forms = [extract_text(text) for text in (traceback, bare)]
    assert forms[0].frames and not forms[1].frames
    assert len({fingerprint(f.error_type, f.message, f.frames) for f in forms}) == 1
    # Where a cause is the code's, its frames still tell two places apart.
    assert fingerprint("KeyError", "'x'", ["a.py:f"]) != fingerprint("KeyError", "'x'")

@pytest.mark.parametrize(
    "message",
    ["'" * 64000, "a/" * 32000, "1." * 32000, "0x" * 32000, "`a" * 32000 + "Did you mean"],
)
def test_template_of_pathological_input_completes(message):
    assert isinstance(message_template(message), str)


# Real failures, one row a pair: `case id | failure | failure | what the
# messages say`. A failure is `swe/<task>#<i>`, observation message i of the
# mini-swe-agent trajectory of that SWE-bench task, or `bug/<type>#<i>`, item i
# of the DebugBench file for that bug type (a prefix of its name will do).

SAME_CAUSE = """
pytest-typeerror-two-tests | swe/astropy-13398#33 | swe/astropy-13398#63 | 'Time' and 'float'
pytest-typeerror-rerun | swe/astropy-13398#63 | swe/astropy-13398#65 | 'Time' and 'float'
pytest-collection-rerun | swe/astropy-8872#59 | swe/astropy-8872#61 | distutils Version
pytest-notimplemented | swe/astropy-8872#63 | swe/astropy-8872#65 | truth value of quantities
django-field-clash-rerun | swe/django-12754#19 | swe/django-12754#93 | Local field 'title'
same-module-two-tasks | swe/django-15732#25 | swe/django-16315#39 | 'reproduce_app'
unittest-assert-rerun | swe/django-16263#119 | swe/django-16263#151 | 10 != 9
run-other-missing-script | swe/django-16263#143 | swe/django-16263#159 | can't open file
rm-other-file-other-task | swe/django-16263#169 | swe/django-16631#67 | rm: cannot remove
rm-other-path | swe/matplotlib-14623#71 | swe/matplotlib-14623#73 | rm: cannot remove
missing-colon-other-line | bug/colon_missing#0 | bug/colon_missing#3 | expected ':'
list-index-other-line | bug/indexing_error#2 | bug/indexing_error#3 | list index
list-index-other-problem | bug/indexing_error#5 | bug/variable_value_error#4 | list index
string-index-other-problem | bug/conditional#2 | bug/variable_value_error#12 | string index
unterminated-string | bug/unclosed_string#0 | bug/unclosed_string#2 | string literal
unterminated-triple-quote | bug/unclosed_string#1 | bug/unclosed_string#11 | triple-quoted
indent-after-if | bug/indentation_error#6 | bug/indentation_error#10 | after 'if'
unindent-mismatch | bug/indentation_error#2 | bug/indentation_error#12 | unindent
return-outside-function | bug/indentation_error#1 | bug/other_error#12 | 'return' outside
same-missing-method | bug/undefined_methods#2 | bug/undefined_methods#13 | 'undefined_method'
same-undefined-name | bug/undefined_keywords#5 | bug/undefined_keywords#19 | 'ArrayList'
same-name-with-suggestion | bug/wrong_comment_mark#0 | bug/wrong_comment_mark#3 | 'lst'
unclosed-paren | bug/parentheses#0 | bug/parentheses#2 | '(' was never
assign-to-subscript | bug/==_and_=#2 | bug/==_and_=#4 | to subscript
walrus-hint | bug/==_and_=#3 | bug/==_and_=#8 | '==' or ':='
"""

# Different causes, often of one error type; the last column is `A vs B`.
DIFFERENT_CAUSE = """
different-modules | swe/django-15380#9 | swe/django-15732#25 | 'test_app' vs 'reproduce_app'
pytest-vs-app-module | swe/matplotlib-25775#175 | swe/django-15380#9 | 'pytest' vs 'test_app'
different-tables | swe/django-16263#25 | swe/django-16263#33 | publisher vs __main___author
typeerror-attributeerror | swe/astropy-13398#33 | swe/astropy-13398#55 | 'Time' vs 'ITRS' object
command-vs-module | swe/django-15732#7 | swe/matplotlib-25775#175 | psql vs pytest
cat-vs-rm | swe/django-16938#47 | swe/django-16631#67 | cat: vs rm:
run-script-vs-rm | swe/django-16263#143 | swe/django-16263#169 | can't open vs cannot remove
same-test-other-assert | swe/sympy-15599#19 | swe/sympy-15599#37 | (x - 3.3) vs Mod(Mod(x
other-test-other-assert | swe/pytest-7571#9 | swe/sympy-14531#111 | 42 == 0 vs python(Eq(x, y))
syntax-other-modules | swe/django-13112#89 | swe/sphinx-10449#25 | syntax vs syntax
indent-other-modules | swe/django-14170#45 | swe/django-16454#19 | indented block vs 'else'
array-vs-quantity-truth | swe/astropy-14539#7 | swe/astropy-8872#63 | of an array vs of quantities
doesnotexist-vs-table | swe/django-11149#17 | swe/django-11149#21 | does not exist vs no such table
misconfigured-apps | swe/django-16631#53 | swe/django-11149#11 | AUTH_USER_MODEL vs no filesystem
attribute-other-objects | swe/django-15732#33 | swe/pylint-4551#35 | in_atomic_block vs 'value'
undefined-across-sets | swe/django-13401#27 | bug/undefined_objects#2 | 'A' vs 'B'
other-methods | bug/undefined_methods#2 | bug/undefined_methods#1 | 'undefined_method' vs 'concat'
different-names | bug/undefined_keywords#5 | bug/undefined_keywords#18 | 'ArrayList' vs 'Array'
concat-list-vs-str | bug/operation_error#2 | bug/undefined_keywords#9 | list vs str
list-vs-string-index | bug/indexing_error#2 | bug/conditional#2 | list vs string
pop-vs-empty-deque | bug/indexing_error#16 | bug/indexing_error#18 | pop index vs empty deque
colon-vs-paren | bug/colon_missing#0 | bug/parentheses#0 | ':' vs never closed
paren-vs-bracket | bug/parentheses#0 | bug/parentheses#6 | '(' vs '['
subscript-vs-call | bug/==_and_=#2 | bug/==_and_=#0 | subscript vs function call
string-vs-triple-quote | bug/unclosed_string#0 | bug/unclosed_string#1 | string vs triple-quoted
class-vs-function-body | bug/indentation_error#3 | bug/indentation_error#17 | class vs function
unsubscriptable-types | bug/indexing_error#11 | bug/indexing_error#15 | 'dict_values' vs 'float'
unbound-locals | bug/indentation_error#9 | bug/wrong_comment_mark#13 | 'i' vs 'curr'
"""


def pairs(table: str) -> list:
    rows = (line.split("|") for line in table.strip().splitlines())
    return [pytest.param(*(cell.strip() for cell in row[1:]), id=row[0].strip()) for row in rows]


@cache
def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _one(folder: Path, pattern: str) -> Path:
    (path,) = folder.glob(pattern)  # exactly one file per reference
    return path


def real_output(ref: str) -> str:
    source, _, rest = ref.partition("/")
    name, _, index = rest.partition("#")
    if source == "bug":
        return _json(_one(BENCH, f"python3_{name}*.json"))[int(index)]["traceback_messages"]
    content = _json(_one(TRAJS, f"*__{name}.traj.json"))["messages"][int(index)]["content"]
    assert "<returncode>0</returncode>" not in content, "not a failed step"
    # Long observations keep head and tail; a harness hands us the tail.
    found = re.search(r"<output_tail>\n?(.*?)</output_tail>", content, re.S) or re.search(
        r"<output>\n?(.*?)</output>", content, re.S
    )
    return found.group(1)


def real_fingerprint(ref: str, subject: str) -> str:
    found = extract_text(real_output(ref))
    assert found is not None
    assert subject in found.message, f"{ref} is not the failure this case is about"
    return fingerprint(found.error_type, found.message, found.frames)


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize(("a", "b", "subject"), pairs(SAME_CAUSE))
def test_same_root_cause_shares_a_fingerprint(a, b, subject):
    assert real_output(a) != real_output(b), "the pair must differ in line, path or value"
    assert real_fingerprint(a, subject) == real_fingerprint(b, subject)


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize(("a", "b", "subjects"), pairs(DIFFERENT_CAUSE))
def test_different_root_causes_differ(a, b, subjects):
    subject_a, subject_b = subjects.split(" vs ")
    assert real_fingerprint(a, subject_a) != real_fingerprint(b, subject_b)


@pytest.mark.usefixtures("data_dir")
def test_every_failed_agent_step_extracts():
    """Each non-empty failed observation in the trajectories yields a usable error."""
    seen = 0
    for path in sorted(TRAJS.glob("*.traj.json")):
        task = path.name.removesuffix(".traj.json").split("__")[1]
        for index, message in enumerate(_json(path)["messages"]):
            if message["role"] != "user" or not re.match(r"<returncode>[1-9]", message["content"]):
                continue
            output = real_output(f"swe/{task}#{index}")
            found = extract_text(output)
            assert (found is None) == (not output.strip()), (path.name, index)
            if found:
                seen += 1
                assert found.error_type and len(found.frames) <= 5
    assert seen > 50
