"""The folders are layers (docs/layers.py, drawn in docs/design.md's "Layout"): every
import of the package, those made in a function or only for type checking too, goes to its
own layer or one below it, never through a wall, no two folders import each other, no
modules import each other in a circle, and each module is named by its own room's text.
The declaration is the one the page is written from (cog), so the page draws what this
test enforces."""

import ast
import re
import sys
from pathlib import Path

from conftest import REPO

sys.path.insert(0, str(REPO / "docs"))
import layers as declared  # docs/layers.py, beside the page cog writes from it

MODULE_FILE = re.compile(r"\b\w+\.py\b")


def layers() -> dict[str, int]:
    """Each room of the declaration (``reflect``, ``reflect.capture``) and its layer."""
    return declared.layer_table()


def walls() -> set[tuple[str, str]]:
    """The declaration's walls: (folder, folder it must not import), as room names."""
    return declared.walls()


def room(module: str) -> str:
    """The folder a module lives in (``reflect.store.runs`` -> ``reflect.store``), or the
    module itself at the top of the package."""
    return ".".join(module.split(".")[:2])


def modules() -> dict[str, Path]:
    found = {}
    for root, package in ((REPO / "reflect", "reflect"), (REPO / "index", "reflect.index")):
        for path in root.rglob("*.py"):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def layer_of(module: str, table: dict[str, int]) -> int:
    owners = [name for name in table if module == name or module.startswith(name + ".")]
    assert owners, f"{module} is in no layer of docs/design.md"
    return table[max(owners, key=len)]


def imports(module: str, path: Path, known: dict[str, Path],
            for_typing: bool = True) -> set[str]:
    """What ``module`` imports of the package, wherever the import statement stands;
    without ``for_typing``, what it imports at run time only."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    if not for_typing:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("reflect")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            if base.startswith("reflect"):
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                          for a in node.names}
    return found - {module}


def test_every_module_is_in_one_layer_of_the_page():
    table = layers()
    assert table, "docs/design.md has lost its table of layers"
    for module in modules():
        layer_of(module, table)


def test_no_import_goes_up_a_layer():
    table, known = layers(), modules()
    upward = [f"{m} (layer {layer_of(m, table)}) imports {t} (layer {layer_of(t, table)})"
              for m, path in known.items() for t in imports(m, path, known)
              if layer_of(t, table) > layer_of(m, table)]
    assert upward == []


def test_no_import_goes_through_a_wall():
    table, known = walls(), modules()
    assert table, "docs/design.md has lost its walls"
    through = sorted(f"{m} imports {t}" for m, path in known.items()
                     for t in imports(m, path, known) if (room(m), room(t)) in table)
    assert through == []


def test_no_two_folders_import_each_other():
    known = modules()
    edges: dict[tuple[str, str], str] = {}
    for m, path in known.items():
        for t in imports(m, path, known):
            if room(m) != room(t):
                edges.setdefault((room(m), room(t)), f"{m} imports {t}")
    both = sorted(f"{edges[a, b]}; {edges[b, a]}" for a, b in edges if (b, a) in edges and a < b)
    assert both == []


def test_the_rooms_of_the_tables_are_folders():
    """A layer or a wall names folders (and the package's own two files), so that
    `ls reflect/` shows the layers."""
    named = set(layers()) | {r for wall in walls() for r in wall}
    loose = sorted(n for n in named - {"reflect", "reflect.__main__"}
                   if not (REPO / n.replace("reflect.", "reflect/", 1).replace(".", "/")).is_dir()
                   and n != "reflect.index")
    assert loose == []
    top = sorted(p.name for p in (REPO / "reflect").glob("*.py"))
    assert top == ["__init__.py", "__main__.py"]


def test_no_modules_import_each_other_in_a_circle():
    known = modules()
    # The imports a module runs: those for type checking stand in no circle at run time.
    graph = {m: {t for t in imports(m, p, known, for_typing=False) if t in known}
             for m, p in known.items()}
    circles = []
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                circles.append(" -> ".join([*trail[trail.index(target):], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_each_module_is_named_by_its_own_room_and_no_other_file_is():
    """What a room holds is said once, in the declaration: its text names each of its
    modules (its subfolders' too) and no file that is not one of them."""
    unnamed, strays = [], []
    for room, text in declared.HOLDS.items():
        folder = REPO / "index" if room == "index/" else REPO / "reflect" / room
        files = {p.name for p in folder.rglob("*.py")}
        named = set(MODULE_FILE.findall(text))
        unnamed += [f"{room}{name}" for name in sorted(files - named - {"__init__.py"})]
        strays += [f"{room}{name}" for name in sorted(named - files)]
    rooms = {r for rs in declared.LAYERS.values() for r in rs if r.endswith("/")}
    assert (unnamed, strays, sorted(rooms - set(declared.HOLDS))) == ([], [], [])


def test_a_private_module_is_imported_from_its_own_folder_only():
    """``store/_lessons.py`` is the store's own: what other folders use is in the folder's
    ``__init__.py`` or a module not named private."""
    known = modules()
    private = {m for m in known if m.rpartition(".")[2].startswith("_")
               and not m.endswith(("__init__", "__main__"))}
    assert private, "no private module left to check"
    folder = {m: m if path.name == "__init__.py" else m.rpartition(".")[0]
              for m, path in known.items()}
    outside = sorted(f"{m} imports {t}" for m, path in known.items()
                     for t in imports(m, path, known)
                     if t in private and folder[m] != folder[t])
    assert outside == []
