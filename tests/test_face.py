"""``Memory``'s face: what other code may use of it is its public names, listed here; its
store, scrubber and recall's query are its own, and ``learn`` and ``eval`` reach them
through one port (``reflect.api.memory.port``). What it hands out is records, never the
store's rows."""

import ast
from pathlib import Path

from conftest import REPO

from reflect import Memory, Settings

MEMORY = REPO / "reflect" / "api" / "memory.py"
# Its public face: the API's methods, where the store is, the run context, the project.
FACE = {
    "capture", "recall", "outcome", "close", "learn", "ensure_worker", "run_worker",
    "status", "failures", "failure", "stats", "injections", "clear", "elsewhere",
    "lessons", "lesson", "effects", "search_lessons", "pin", "forget", "quarantine",
    "release", "feedback", "teach", "consolidate", "export", "import_lessons", "progress",
    "doctor", "repair",
    "scope", "clock",
    "context", "settings", "home", "store_url", "run", "model", "embeddings", "enabled",
    "offline",
}
MAKERS = {"Memory", "open_memory", "memory"}  # what hands out a Memory


def sources() -> list[Path]:
    """Every module of the package, the benches and the tests but memory.py itself."""
    found = [*(REPO / "reflect").rglob("*.py"), *(REPO / "index").rglob("*.py"),
             *(REPO / "bench").glob("*.py"), *(REPO / "tests").glob("*.py")]
    return sorted(p for p in found if p.resolve() != MEMORY.resolve()
                  and "index" not in p.relative_to(REPO).parts[1:2])


def memory_class(tree: ast.Module) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Memory")


def insides() -> set[str]:
    """The private names of ``Memory``: its methods and what it keeps on ``self``."""
    cls = memory_class(ast.parse(MEMORY.read_text()))
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    names |= {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)
              and isinstance(n.value, ast.Name) and n.value.id == "self"}
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def made_by(call: ast.expr) -> bool:
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    return (func.id if isinstance(func, ast.Name) else
            func.attr if isinstance(func, ast.Attribute) else "") in MAKERS


def memories(tree: ast.Module) -> set[str]:
    """The expressions (as source) that hold a Memory: bound from a call that makes one,
    a parameter annotated ``Memory``, an attribute set from either."""
    held: set[str] = set()
    for _ in range(2):  # an attribute set from a name found in the first pass
        for node in ast.walk(tree):
            if isinstance(node, ast.withitem) and node.optional_vars is not None \
                    and made_by(node.context_expr):
                held.add(ast.unparse(node.optional_vars))
            elif isinstance(node, ast.Assign) and (
                    made_by(node.value) or ast.unparse(node.value) in held):
                held |= {ast.unparse(t) for t in node.targets}
            elif isinstance(node, ast.arg) and node.annotation is not None \
                    and ast.unparse(node.annotation).strip("'\"") in ("Memory", "Memory | None"):
                held.add(node.arg)
    return held


def test_no_code_reads_a_memory_beyond_its_face():
    private = insides()
    assert {"_store", "_scrubber", "_query"} <= private
    found = []
    for path in sources():
        tree = ast.parse(path.read_text())
        held = memories(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or isinstance(node.ctx, ast.Del):
                continue
            owner = ast.unparse(node.value)
            inside = node.attr in private and owner not in ("self", "cls")
            beyond = ((owner in held or made_by(node.value)) and not node.attr.startswith("__")
                      and node.attr not in FACE)
            if inside or beyond:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {owner}.{node.attr}")
    assert found == []


def test_the_walk_finds_a_read_of_the_store_through_each_way_a_memory_is_held():
    tree = ast.parse("with Memory() as mem:\n    mem.store\n"
                     "def f(m: Memory):\n    m.scrubber\n"
                     "class A:\n    def __init__(self, mem: Memory):\n        self.mem = mem\n")
    assert {"mem", "m", "self.mem"} <= memories(tree)


def test_memory_shows_its_face_and_nothing_else(own_store):
    with Memory(settings=Settings(worker_thread=False)) as mem:
        public = {name for name in dir(mem) if not name.startswith("_")}
    assert public == FACE
    assert not {"store", "scrubber", "query", "vectors", "predictor", "holdout"} & public


def typed_dicts() -> set[str]:
    """The names of every TypedDict the package defines (rows and their parts)."""
    classes = [n for p in (REPO / "reflect").rglob("*.py")
               for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ClassDef)]
    found = {"TypedDict"}
    while True:
        more = {c.name for c in classes if {ast.unparse(b) for b in c.bases} & found}
        if more <= found:
            return found - {"TypedDict"}
        found |= more


def test_no_public_method_of_memory_hands_out_a_row():
    rows = typed_dicts()
    assert {"FailureRow", "LessonRow", "InjectionRow"} <= rows
    handed = {}
    for node in memory_class(ast.parse(MEMORY.read_text())).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") \
                and node.returns is not None:
            handed[node.name] = {n.id for n in ast.walk(ast.parse(
                ast.unparse(node.returns).strip("'\""))) if isinstance(n, ast.Name)}
    assert {"lessons", "lesson", "injections", "feedback", "search_lessons"} <= handed.keys()
    assert {name: sorted(types & rows) for name, types in handed.items() if types & rows} == {}


def test_no_deprecation_shim_in_an_unreleased_version():
    """0.1.0 is unreleased: a renamed name is renamed, with nothing kept for a caller that
    cannot exist yet."""
    warned = sorted(f"{p.relative_to(REPO)}:{n.lineno}" for p in (REPO / "reflect").rglob("*.py")
                    for n in ast.walk(ast.parse(p.read_text()))
                    if isinstance(n, ast.Name) and n.id in (
                        "DeprecationWarning", "PendingDeprecationWarning", "FutureWarning"))
    assert warned == []
