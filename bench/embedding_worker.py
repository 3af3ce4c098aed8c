"""What the background embedding costs a machine: a worker's first embedding (the worker
that `reflect capture` or a hook starts: `reflect worker`, here with `--once`) with the
bundled model, its peak RSS, CPU time and wall time, beside the same worker with the
hashing embedder and `python -c pass`, measured in one run; then 3 stores (--stores) with
embedding jobs at once, a worker each started together (`--idle-exit 1`), sampled every
50 ms: the most RSS they held together and the most that had a model loaded at the same
time, with the user's model lock (reflect/reflection/model_lock.py) and with its folder open to
others, where it is not used (each worker loads its own model, as before the lock).

Run: .venv/bin/python bench/embedding_worker.py [--stores N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import emit

from reflect import Memory

STORES = 3
LOADED_KB = 300_000  # a worker above this RSS has a model loaded (the hashing one: ~90 MB)


def store(home: Path) -> None:
    """A store with what a capture queues: the vectors of its error and of its goal."""
    with Memory(home, run="bench", embeddings="") as mem:
        mem.capture(goal="Make the weekly report run", action="python report.py", exit_code=1,
                    error_text="ModuleNotFoundError: No module named 'openpyxl'")


def measured(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall time, CPU time and peak RSS of one process, from its own rusage."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv} exited {proc.returncode}")
    return {"wall_s": time.perf_counter() - began, "cpu_s": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024}


def worker(home: Path, spec: str, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    return [sys.executable, "-m", "reflect", "worker", "--once"], {
        **env, "REFLECT_HOME": str(home), "REFLECT_EMBEDDINGS": spec}


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def together(root: Path, env: dict[str, str], stores: int) -> dict[str, float]:
    """``stores`` workers started at once, one a store, sampled until all have exited."""
    homes = [root / f"store{i}" for i in range(stores)]
    for home in homes:
        store(home)
    began = time.perf_counter()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "reflect", "worker", "--idle-exit", "1"],
        env={**env, "REFLECT_HOME": str(home), "REFLECT_EMBEDDINGS": ""},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for home in homes]
    peak_kb, most_loaded, cpu = 0, 0, 0.0
    alive = {p.pid: p for p in procs}
    while alive:
        sizes = [rss_kb(pid) for pid in alive]
        peak_kb = max(peak_kb, sum(sizes))
        most_loaded = max(most_loaded, sum(size > LOADED_KB for size in sizes))
        for pid in list(alive):
            done, _, usage = os.wait4(pid, os.WNOHANG)
            if done:
                cpu += usage.ru_utime + usage.ru_stime
                del alive[pid]
        time.sleep(0.05)
    for home in homes:
        with Memory(home, embeddings="") as mem:
            if mem.status().jobs != {"done": 1}:
                raise SystemExit(f"{home}: the embedding job was not run: {mem.status()}")
    return {"peak_rss_mb": peak_kb / 1024, "most_models_loaded": most_loaded,
            "cpu_s": cpu, "wall_s": time.perf_counter() - began}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stores", type=int, default=STORES,
                   help=f"stores with a worker each, started at once ({STORES})")
    stores = p.parse_args().stores
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "REFLECT_WORKER": "off",
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        one = {}
        for name, spec in (("hashing", "hash"), ("bundled model", "")):
            home = root / f"once-{spec or 'bundled'}"
            store(home)
            one[name] = measured(*worker(home, spec, env))
        one["python -c pass"] = measured([sys.executable, "-c", "pass"], env)
        print("a worker's first embedding (reflect worker --once, 2 texts)")
        for name, f in one.items():
            print(f"  {name:16} wall {f['wall_s']:6.2f} s  CPU {f['cpu_s']:6.2f} s  "
                  f"peak RSS {f['rss_mb']:6.0f} MB")
        shared = root / "shared"
        (shared / "reflect").mkdir(parents=True)
        (shared / "reflect").chmod(0o777)  # the lock's folder, others may write: not used
        many = {"with the user's lock": together(root / "locked", env, stores),
                "lock not used": together(root / "unlocked",
                                          {**env, "XDG_RUNTIME_DIR": str(shared)}, stores)}
        print(f"{stores} stores, a worker each, started at once (bundled model)")
        for name, f in many.items():
            print(f"  {name:22} peak RSS together {f['peak_rss_mb']:6.0f} MB, at most "
                  f"{f['most_models_loaded']} model(s) loaded at once, CPU {f['cpu_s']:5.1f} s, "
                  f"all done in {f['wall_s']:5.1f} s")
    print(f"load average {os.getloadavg()[0]:.2f}")
    emit({"first_embedding": one, "stores": stores, "together": many,
          "load": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
