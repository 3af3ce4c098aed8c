"""The folders are layers (docs/design.md, "Layout"): every import of the package, those
made in a function or only for type checking too, goes to its own layer or one below it,
never through a wall, no two folders import each other, and no modules import each other
in a circle. The tables are read from the page, so the page draws what this test
enforces."""

import ast
import re
from pathlib import Path

from conftest import REPO

TABLE = re.compile(r"^layer (\d+)  (.+)$", re.M)
WALL = re.compile(r"^wall  (\S+)/ (\S+)/ ", re.M)


def layers() -> dict[str, int]:
    """Each entry of the page's table (``memory``, ``capture/``) as a module name prefix."""
    page = (REPO / "docs" / "design.md").read_text()
    layout = page[page.index("## Layout"):]
    found = {}
    for number, names in TABLE.findall(layout):
        for name in names.split():
            module = "reflect" if name == "__init__" else f"reflect.{name.rstrip('/')}"
            found[module] = int(number)
    return found


def walls() -> set[tuple[str, str]]:
    """The page's walls: (folder, folder it must not import), as room names."""
    page = (REPO / "docs" / "design.md").read_text()
    layout = page[page.index("## Layout"):]
    return {(f"reflect.{a}", f"reflect.{b}") for a, b in WALL.findall(layout)}


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


def test_the_page_s_layout_names_every_module():
    page = (REPO / "docs" / "design.md").read_text()
    layout = page[page.index("## Layout"):]
    unnamed = sorted(str(path.relative_to(REPO)) for path in modules().values()
                     if path.name != "__init__.py" and path.name not in layout)
    assert unnamed == []
