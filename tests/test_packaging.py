"""What a user installs: compatible ranges, never exact pins; the pins live in .ci/."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# The extras `make test-oldest` installs at their lower bounds, beside the core.
OLDEST_EXTRAS = ("model", "dev")


def declared(*extras: str) -> list[Requirement]:
    reqs = list(PYPROJECT["dependencies"])
    for extra in extras or PYPROJECT["optional-dependencies"]:
        reqs += PYPROJECT["optional-dependencies"][extra]
    return [Requirement(r) for r in reqs]


def pins(name: str) -> dict[str, Version]:
    found = {}
    for line in (REPO / ".ci" / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", line
            found[req.name.lower()] = Version(spec.version)
    return found


def lower_bound(req: Requirement) -> Version:
    bounds = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert len(bounds) == 1, f"{req} needs one lower bound (>=)"
    return bounds[0]


@pytest.mark.slow  # builds the wheel
def test_the_built_wheel_pins_nothing_exactly(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path),
         str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("reflect_memory-*.whl")
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [
            line.split(":", 1)[1].strip()
            for line in z.read(meta).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
        names = z.namelist()
        assert {"reflect/py.typed", "reflect/integrations/mcp_listing.json"} <= set(names)
        # the command: a script of its own, not also a file of the package
        assert any(n.endswith(".data/scripts/reflect") for n in names)
        assert "reflect/cli/reflect" not in names
    assert any(r.startswith("numpy") for r in requires)
    for line in requires:
        req = Requirement(line)
        assert all(s.operator not in ("==", "===") for s in req.specifier), line
        assert req.specifier, f"{line} has no lower bound"


def test_every_dependency_has_one_tested_lower_bound():
    for req in declared():
        lower_bound(req)


def test_litellm_never_resolves_to_a_pulled_release():
    (litellm,) = [r for r in declared("model") if r.name == "litellm"]
    for pulled in ("1.107.0", "1.107.3", "1.107.12"):
        assert not litellm.specifier.contains(pulled)
    assert litellm.specifier.contains("1.110.2")


def test_the_exact_versions_tested_are_within_the_ranges():
    tested = pins("constraints.txt")
    for req in declared():
        assert req.name.lower() in tested, f"{req.name} is missing from .ci/constraints.txt"
        assert req.specifier.contains(tested[req.name.lower()]), req


@pytest.mark.parametrize("req", declared(*OLDEST_EXTRAS), ids=str)
def test_the_oldest_venv_installs_each_declared_lower_bound(req):
    oldest = pins("oldest.txt")
    assert oldest.get(req.name.lower()) == lower_bound(req), (
        f".ci/oldest.txt must pin {req.name}=={lower_bound(req)}, the lower bound declared"
    )
