"""``REFLECT_*`` is read where the run context is made: a variable is named for reading by
the readers (base/config.py, base/home.py, api/settings.py), by ``RunContext`` that calls
them (api/context.py), and at two boundaries that decide before a context exists
(cli/client.py, the standard-library client: whether to ask the helper; integrations/
mcp.py: whether the server names its own run). The readers read the mapping they are
given, and below the API no call is handed the process's environment whole."""

from __future__ import annotations

import ast
import re

from conftest import REPO
from test_layers import layer_of, layers, modules

READERS = {"reflect/base/config.py", "reflect/base/home.py", "reflect/api/settings.py"}
MAKER = {"reflect/api/context.py"}
BOUNDARIES = {"reflect/cli/client.py", "reflect/integrations/mcp.py"}
API = layers()["reflect.api"]
VARIABLE = re.compile(r"REFLECT_[A-Z_]+")


def variables_read(tree: ast.AST) -> set[str]:
    """The REFLECT_ variables a module names other than as a key it sets (a mapping's
    display, as ``RunContext.environ`` builds one) or in a message."""
    keys = {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys if k}
    quoted = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and VARIABLE.fullmatch(n.value) and id(n) not in keys | quoted}


def is_environ(node: ast.AST) -> bool:
    """``os.environ`` or ``os.getenv``."""
    return (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def environ_handed(tree: ast.AST) -> list[int]:
    """The lines of each call given ``os.environ`` whole, as an argument."""
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and any(is_environ(a) for a in [*n.args, *(k.value for k in n.keywords)])]


def sources() -> dict[str, ast.AST]:
    return {str(p.relative_to(REPO)): ast.parse(p.read_text()) for p in modules().values()}


def test_a_reflect_variable_is_read_only_where_the_context_is_made():
    readers = {path for path, tree in sources().items() if variables_read(tree)}
    assert readers - READERS - MAKER - BOUNDARIES == set()
    assert readers >= READERS | MAKER  # the walk sees them


def test_the_readers_read_the_mapping_they_are_given():
    named = {path: [n.lineno for n in ast.walk(tree) if is_environ(n)]
             for path, tree in sources().items() if path in READERS}
    assert named.keys() == READERS
    assert {path: lines for path, lines in named.items() if lines} == {}


def test_below_the_api_no_call_is_handed_the_process_environment():
    table, found = layers(), []
    for module, path in modules().items():
        if layer_of(module, table) < API:
            found += [f"{path.relative_to(REPO)}:{line}"
                      for line in environ_handed(ast.parse(path.read_text()))]
    assert found == []


def test_the_walks_see_what_they_are_for():
    tree = ast.parse(
        "import os\n"
        "x = env.get('REFLECT_RUN')\n"
        "y = {'REFLECT_HOME': home}\n"
        "z = f'REFLECT_AB_{name}'\n"
        "w = 'set REFLECT_MODEL to a model'\n"
        "enabled(os.environ)\n"
        "os.environ.get('HOME')\n")
    assert variables_read(tree) == {"REFLECT_RUN"}
    assert environ_handed(tree) == [6]
