"""Details an item names: files, paths, dotted modules and snake_case identifiers. An
item is true of its failures only if every detail it names occurs in one of them
(their command, error, phase or what worked); the rest are foreign details.

Words that advice names whatever the failure (``manage.py migrate``, ``conftest.py``,
``requirements.txt``) are vocabulary, not details of a failure.
"""

from __future__ import annotations

import re

from reflect.base.records import FailureRow

_DETAIL = re.compile(
    r"(?<![\w./-])("
    r"[\w.-]*/[\w./-]*[\w]"  # a path
    r"|[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|json|ya?ml|toml|cfg|ini|txt|sh|c|h|cc|cpp|rs|go|java"
    r"|rb|html|css|md|lock)"  # a file
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}"  # a dotted module path
    r"|[a-z]+_[a-z0-9_]+"  # a snake_case name: a table, a function
    r")(?![\w/-]|…)"  # a word cut short ("call_c…") names nothing
)
VOCABULARY = frozenset({
    "manage.py", "conftest.py", "settings.configure", "django.setup", "call_command",
    "DJANGO_SETTINGS_MODULE", "python3 -m", "/tmp", "2>&1", ".venv", "dist-packages",
    "site-packages", "@types/jest", "@types/node", "node_modules", "requirements.txt",
    "requirements-dev.txt", "setup.py", "setup.cfg", "pyproject.toml", "package.json",
    "tox.ini", "settings.py", "tsconfig.json", "Cargo.toml", "go.mod",
})


def details(text: str) -> set[str]:
    return {d for d in _DETAIL.findall(text) if d not in VOCABULARY and not d.startswith("L-")}


def foreign(item_text: str, failures: list[FailureRow]) -> set[str]:
    """The details of ``item_text`` that none of ``failures`` holds."""
    held = "\n".join(f"{f['action']}\n{f['error_type']}: {f['message']}\n{f['phase']}\n"
                     f"{f['resolution']}" for f in failures)
    return {d for d in details(item_text) if d not in held}
