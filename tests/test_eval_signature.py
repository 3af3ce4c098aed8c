import textwrap

import pytest

from reflect.eval._signature import group, signature, template


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("No module named 'requests'", "No module named 'requests'"),
        ('No module named "requests"', "No module named 'requests'"),
        ("no such table: annotations_publisher", "no such table: annotations_publisher"),
        ("'Solution' object has no attribute 'concat'",
         "'Solution' object has no attribute 'concat'"),
        ("expected ':'", "expected ':'"),
        ("'(' was never closed", "'(' was never closed"),
        ("unterminated string literal (detected at line 57)",
         "unterminated string literal (detected at line <n>)"),
        ("invalid literal for int() with base 10: 'twelve apples'",
         "invalid literal for int() with base <n>: <str>"),
        ("can't open file '/testbed/apply_fix_v5.py': [Errno 2] No such file or directory",
         "can't open file <path>: [Errno <n>] No such file or directory"),
        ("rm: cannot remove 'apply_fix_v3.py': No such file or directory",
         "rm: cannot remove <path>: No such file or directory"),
        ("cat: tests/serializers/models.py: No such file", "cat: <path>: No such file"),
        ("<Handler object at 0x715d92b8e7f0>", "<Handler object at <hex>>"),
        ("GET https://example.com/a?b=1 timed out", "GET <url> timed out"),
        ("name 'nums' is not defined. Did you mean: 'dumps'?", "name 'nums' is not defined"),
        ("Wrong Answer: 44 of 52 test cases passed", "Wrong Answer: <n> of <n> test cases passed"),
        ("first line\nsecond line", "first line"),
        ("field_12 and/or  x", "field_12 and/or x"),
    ],
)
def test_template(message, expected):
    assert template(message) == expected


def test_signature_is_type_and_template_of_the_extracted_error():
    text = textwrap.dedent("""\
        Traceback (most recent call last):
          File "/testbed/django/db/backends/utils.py", line 89, in _execute
            return self.cursor.execute(sql, params)
        sqlite3.OperationalError: no such table: annotations_publisher
    """)
    assert signature(text) == "OperationalError: no such table: annotations_publisher"
    judge = "Line 7: NameError: name 'insert' is not defined. Did you mean: 'insort'?"
    assert signature(judge) == "NameError: name 'insert' is not defined"


def test_same_mistake_elsewhere_has_the_same_signature():
    a = 'File "/a/x.py", line 3\nKeyError: 3\n'
    b = 'File "/b/y.py", line 90\nKeyError: 17\n'
    assert signature(a) == signature(b) == "KeyError: <n>"
    assert signature("ModuleNotFoundError: No module named 'numpy'") != signature(
        "ModuleNotFoundError: No module named 'requests'")


@pytest.mark.parametrize("text", [None, "", "  \n\t\n"])
def test_no_error_text_has_no_signature(text):
    assert signature(text) is None


def test_signature_does_not_use_the_store_fingerprint():
    """The metric must not grade itself with the store's fingerprint: the signature's
    module reads the error with the extractor and masks it by its own rule, and reaches no
    module of the fingerprint, directly or through what it imports."""
    import ast
    import importlib.util
    from pathlib import Path

    seen, todo = set(), ["reflect.eval._signature"]
    while todo:
        name = todo.pop()
        try:
            if name in seen or importlib.util.find_spec(name) is None:
                continue
        except ModuleNotFoundError:
            continue  # a name imported from a module, not a module
        seen.add(name)
        tree = ast.parse(Path(importlib.import_module(name).__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith("reflect.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reflect."):
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    assert "reflect.capture.extract" in seen and "reflect.capture.fingerprint" not in seen
    assert signature("ValueError: bad value 3") == "ValueError: bad value <n>"


@pytest.mark.parametrize(("text", "expected"), [
    ("ModuleNotFoundError: No module named 'yaml'", "ModuleNotFoundError: No module named <q>"),
    ("django.db.utils.OperationalError: no such table: auth_user",
     "OperationalError: no such table: <q>"),
    ("AttributeError: 'Foo' object has no attribute 'bar'",
     "AttributeError: <q> object has no attribute <q>"),
    ("KeyError: 'DJANGO_SETTINGS_MODULE'", "KeyError: <q>"),
])
def test_group_masks_the_subject_the_signature_keeps(text, expected):
    assert group(signature(text)) == expected
    assert signature(text) != expected


def test_missing_modules_share_a_group_not_a_signature():
    a, b = (signature(f"ModuleNotFoundError: No module named '{m}'") for m in ("yaml", "six"))
    assert a != b and group(a) == group(b)
    assert group(None) is None
