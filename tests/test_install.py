"""The package as users install it: the built wheel and sdist, each in a fresh venv, no `-e`.

An editable install reads the source tree and hides a wheel that lacks a subpackage, so
these tests build the distributions and run them from a venv that has never seen the
repository: the library's import, a capture, a recall, a hook event and the MCP server's
initialize.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def source_packages() -> set[str]:
    """Every import package the source tree holds, under the names it installs as."""
    found = set()
    for mapped, folder in SETUPTOOLS["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            found.add(".".join([mapped, *rel.parts]))
    return found


def test_the_wheel_lists_every_package_of_the_source_tree():
    assert set(SETUPTOOLS["packages"]) == source_packages()


def clean_copy(dest: Path) -> Path:
    """The files git knows of (committed or not, minus the ignored): a build from the working
    tree itself would reuse build/ and *.egg-info left by earlier builds, which can hold
    modules the package list no longer names."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            check=True, capture_output=True, text=True).stdout
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # The sdist, then the wheel built from it, as `python -m build` does by default.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                    str(clean_copy(tmp_path_factory.mktemp("src")))],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def fresh_venv(path: Path, dist: Path, extras: str = "") -> Path:
    venv.create(path, with_pip=True)
    python = path / "bin" / "python"
    # The exact versions tested: a fresh venv resolves the same numpy (and mcp) as CI's.
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-c", str(REPO / ".ci" / "constraints.txt"), f"{dist}{extras}"],
                   check=True, capture_output=True, timeout=600)
    return path / "bin"


def run(bindir: Path, tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path),
           "REFLECT_HOME": str(tmp_path / "store"), "REFLECT_WORKER": "off",
           "REFLECT_EMBEDDINGS": "off"}
    # Outside the repository, so nothing imports from the source tree.
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_a_regular_install_runs_capture_recall_hooks_and_the_library(kind, dists, tmp_path):
    bindir = fresh_venv(tmp_path / "venv", dists[kind])
    where = run(bindir, tmp_path, "python", "-c", "import reflect; print(reflect.__file__)")
    assert str(tmp_path / "venv") in where.stdout, where.stderr
    # the command is the package's own script, pointed at the venv's interpreter, not an
    # entry point's wrapper, which imports re in every hook's process
    script = (bindir / "reflect").read_text()
    assert script.startswith(f"#!{bindir}/python") and "import re\n" not in script

    captured = run(bindir, tmp_path, "reflect", "capture", "--run", "r1", "--iteration", "1",
                   "--action", "python app.py", "--exit-code", "1", "--error-file", "-",
                   stdin="ModuleNotFoundError: No module named 'yaml'\n")
    assert captured.returncode == 0 and captured.stderr == "", captured.stderr
    recalled = run(bindir, tmp_path, "reflect", "recall", "--run", "r1", "--iteration", "2")
    assert "No module named 'yaml'" in recalled.stdout, recalled.stderr

    # the command a user's own settings get: this install's script, by its path
    installed = run(bindir, tmp_path, "reflect", "install", "claude-code", "--user")
    assert installed.returncode == 0, installed.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command == f"{bindir.resolve() / 'reflect'} hook claude-code"
    hook = run(bindir, tmp_path, *shlex.split(command),
               stdin=json.dumps({"hook_event_name": "SessionStart", "session_id": "s1",
                                 "cwd": str(tmp_path)}))
    assert hook.returncode == 0 and "Traceback" not in hook.stderr, hook.stderr
    json.loads(hook.stdout or "{}")

    library = run(bindir, tmp_path, "python", "-c",
                  "from reflect import Memory\n"
                  "with Memory(run='r1') as mem: print(mem.recall(iteration=3).text)")
    assert "No module named 'yaml'" in library.stdout, library.stderr


def test_the_mcp_extra_serves_initialize(dists, tmp_path):
    bindir = fresh_venv(tmp_path / "venv", dists["wheel"], "[mcp]")
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}}}
    env = {**os.environ, "PATH": f"{bindir}:/usr/bin:/bin", "REFLECT_HOME": str(tmp_path / "s"),
           "REFLECT_EMBEDDINGS": "off", "REFLECT_WORKER": "off"}
    with subprocess.Popen([str(bindir / "reflect"), "mcp"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, cwd=tmp_path) as server:
        assert server.stdin and server.stdout
        server.stdin.write(json.dumps(initialize) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        server.stdin.close()
        server.wait(timeout=30)
    assert answer["result"]["serverInfo"]["name"] == "reflect", answer
