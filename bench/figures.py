"""Rerun everything the README quotes and print its tables, in the README's own format.

Run: make figures   (or .venv/bin/python bench/figures.py [--only NAME,...])
Each step runs as it does on its own (its lines are printed as they come); a bench
also writes its figures as JSON to the file named by BENCH_FIGURES, which this driver
sets, and the tables are rendered from those files at the end. Nothing is read from an
earlier run: every figure printed comes from running the product's code now. The
replays take minutes and the predictor's grid most of the time: the whole run took
58 minutes on this repository's shared 2-core machine, so it is not part of CI.

The shared data sets are read from $REFLECT_DATA (default ../shared/data beside the
repository).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reflect.eval._compare import best_list, holds_against

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("REFLECT_DATA") or REPO.parent / "shared" / "data")
FIGURES_ENV = "BENCH_FIGURES"


def no_data(source: Path) -> str:
    """What a bench says when a data set it replays is missing."""
    return (f"no data at {source}: the public data sets are not in the repository; README.md"
            " (\"The public data sets\") says where each comes from and how to get it; set"
            " REFLECT_DATA to the directory that holds them, or pass it as the argument")


def emit(figures: dict) -> None:
    """Write a bench's figures as JSON where the driver asked (BENCH_FIGURES); else nothing."""
    path = os.environ.get(FIGURES_ENV)
    if path:
        Path(path).write_text(json.dumps(figures, indent=1, default=float), encoding="utf-8")


# -- the steps ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]  # after the interpreter
    read: Callable[[str, Path], dict] | None = None  # figures from stdout (else the JSON)


def bench(name: str) -> Step:
    return Step(name, (f"bench/{name}.py",))


def iterations_to_success(out: str, _: Path) -> dict:
    """The closing lines of `python -m reflect.cli.demo`."""
    tail = out.split("===== iterations to success =====", 1)[-1]
    return dict(re.findall(r"^\s+(memory \w+)\s+(.+?)\s*$", tail, re.M))


def pytest_counts(out: str, _: Path) -> dict:
    """passed / failed / skipped / errors from pytest's closing line."""
    last = next((line for line in reversed(out.splitlines()) if " in " in line), "")
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|error)", last)}
    if not counts:
        return {}
    return {"passed": counts.get("passed", 0), "failed": counts.get("failed", 0),
            "skipped": counts.get("skipped", 0), "errors": counts.get("error", 0)}


def tests(name: str, *files: str) -> Step:
    return Step(name, ("-m", "pytest", "-q", "-p", "no:cacheprovider", *files), pytest_counts)


LEAKS = ("tests/test_leaks.py",)
HOSTILE = ("tests/test_hostile.py",)
FAULTS = ("tests/test_pending.py", "tests/test_bounds.py", "tests/test_store_guard.py")
STORE_FAULTS = ("tests/test_doctor.py", "tests/test_store_bound.py")

STEPS = (
    Step("demo", ("-m", "reflect.cli.demo"), iterations_to_success),
    bench("capture_recall"),
    bench("hung_provider"),
    bench("recall"),
    bench("search"),
    bench("hooks"),
    bench("hook_pairs"),
    bench("importtime"),
    bench("embedding_worker"),
    bench("mcp"),
    bench("store_bound"),
    bench("team"),
    bench("silent_store"),
    bench("attacks"),
    bench("hook_load"),
    tests("leaks", *LEAKS),
    tests("hostile", *HOSTILE),
    tests("faults", *FAULTS),
    tests("store_faults", *STORE_FAULTS),
    bench("holdout"),
    bench("replay"),
    bench("predictor"),
    bench("learn"),
    bench("house_rules"),
    bench("action_signal"),
    bench("kin_signal"),
    bench("actionable"),
)


def run(step: Step, tmp: Path) -> tuple[dict | None, float]:
    """Run one step, its output passed through as it comes; its figures (None if it failed)."""
    out_file = tmp / f"{step.name}.json"
    env = {**os.environ, FIGURES_ENV: str(out_file)}
    print(f"\n######## {step.name}: python {' '.join(step.argv)}", flush=True)
    start = time.perf_counter()
    lines = []
    with subprocess.Popen([sys.executable, *step.argv], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, bufsize=1) as child:
        assert child.stdout is not None
        for line in child.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    took = time.perf_counter() - start
    if step.read is not None:
        figures = step.read("".join(lines), out_file)
        return (figures if figures else None), took
    if child.returncode != 0 or not out_file.exists():
        print(f"######## {step.name} failed (exit {child.returncode}): no figures", flush=True)
        return None, took
    return json.loads(out_file.read_text(encoding="utf-8")), took


# -- formatting -----------------------------------------------------------------------------

def g(x: float) -> str:
    """Three significant digits, never in exponent form: 0.465, 6.2 -> 6.20, 233, 1,050."""
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:#.3g}".rstrip(".") if x else "0"


def n(x: float) -> str:
    return f"{x:,.0f}"


DASH = "\N{EN DASH}"  # a cell with nothing to count, as the README writes it


def frac(m: dict | None, pct: bool = True, interval: bool = False) -> str:
    """k/n, with the share and its interval when asked; DASH when there is nothing to count."""
    if not m or not m.get("den"):
        return DASH
    text = f"{n(m['num'])}/{n(m['den'])}"
    if pct and m["num"] and m.get("value") is not None:
        text += f", {100 * m['value']:.1f}%"
        if interval and m.get("low") is not None:
            text += f" [{100 * m['low']:.1f}, {100 * m['high']:.1f}]"
    return text


def precision(m: dict | None) -> str:
    if not m or not m.get("den"):
        return DASH
    return f"{n(m['num'])}/{n(m['den'])} ({100 * m['value']:.1f}%)"


def target(text: str, met: bool) -> str:
    return text if met else f"{text} (missed)"


def table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:  # callers escape a | in a cell
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"
    return "\n".join([line(header), "|" + "---|" * len(header), *map(line, rows)])


# -- the README's tables --------------------------------------------------------------------

def demo_block(f: dict) -> str:
    d = f["demo"]
    return "\n".join(["```", "===== iterations to success =====",
                      *(f"  {name:<11} {done}" for name, done in d.items()), "```"])


HOOK_ROWS = (  # README label, the bench's names, target (ms, x pass, x numpy)
    ("`python -c pass`", ("python -c pass",), None),
    ('`python -c "import numpy"`', ('python -c "import numpy"',), None),
    ("`reflect hook claude-code`, `PreToolUse`", ("hook PreToolUse",),
     ("< 100 ms, ≤ 3x", 100, 3, None)),
    ("hook `PostToolUse` of Bash (a rerun: the outcome)", ("hook PostToolUse (Bash)",),
     ("≤ 3x", None, 3, None)),
    ("hook `PostToolUse` of Bash (any other success)", ("hook PostToolUse (other)",),
     ("≤ 3x", None, 3, None)),
    ("hook `PostToolUseFailure` (capture + block)", ("hook PostToolUseFailure",),
     ("< 150 ms, ≤ 3x", 150, 3, None)),
    ("hook `UserPromptSubmit` / `SessionStart` (block)",
     ("hook UserPromptSubmit", "hook SessionStart"), ("≤ 3x", None, 3, None)),
    ("`reflect capture`", ("reflect capture",), ("≤ 3x", None, 3, None)),
    ("`reflect recall`", ("reflect recall",), ("≤ 1.3x", None, None, 1.3)),
    ("resident helper: `PreToolUse`", ("helper PreToolUse",), ("≤ 1.5x", None, 1.5, None)),
    ("resident helper: `PostToolUse` of Bash (the outcome)", ("helper PostToolUse (Bash)",),
     ("≤ 1.5x", None, 1.5, None)),
    ("resident helper: `PostToolUse` of Bash (any other success)",
     ("helper PostToolUse (other)",), ("≤ 1.5x", None, 1.5, None)),
    ("resident helper: `PostToolUseFailure`", ("helper PostToolUseFailure",),
     ("≤ 1.5x", None, 1.5, None)),
    ("resident helper: `UserPromptSubmit` / `SessionStart`",
     ("helper UserPromptSubmit", "helper SessionStart"), ("≤ 1.5x", None, 1.5, None)),
    ("resident helper: `reflect capture`", ("helper capture",), None),
    ("resident helper: `reflect recall`", ("helper recall",), None),
)


def hooks_table(f: dict) -> str:
    medians = f["hooks"]["medians_ms"]
    bare, numpy = medians["python -c pass"], medians['python -c "import numpy"']
    rows = []
    for label, names, goal in HOOK_ROWS:
        ms = [medians[name] for name in names]
        cells = [" / ".join(g(x) for x in ms) + " ms",
                 " / ".join(f"{x / bare:.2f}x" for x in ms),
                 " / ".join(f"{x / numpy:.2f}x" for x in ms)]
        if goal is None:
            rows.append([label, *cells, ""])
            continue
        text, limit, vs_bare, vs_numpy = goal
        met = all((limit is None or x < limit) and (vs_bare is None or x / bare <= vs_bare)
                  and (vs_numpy is None or x / numpy <= vs_numpy) for x in ms)
        rows.append([label, *cells, target(text, met)])
    return table(["process", "median", "vs `python -c pass`", "vs `import numpy`", "target"],
                 rows)


def matched_cell(m: dict, key: str) -> str:
    """A mode's cross-run coverage by ``key``, then the best popularity list shown with as
    many items (``reflect.eval._matched``)."""
    if not m.get("matched"):
        return DASH
    figures = m["matched"]["keys"][key]
    mode = figures["mode"]
    pool, best = max(figures["matched"].items(), key=lambda kv: kv[1]["covered"])
    return f"{mode['covered']}/{mode['repeats']} vs {best['covered']} ({pool})"


REPLAY_ROWS = (
    ("cross-run coverage", lambda m: frac(m["coverage_cross"], interval=True)),
    ("cross-run, by group, vs the best popularity list of as many items",
     lambda m: matched_cell(m, "group")),
    ("cross-run, by signature, vs the same", lambda m: matched_cell(m, "signature")),
    ("within-run coverage", lambda m: frac(m["coverage_within"])),
    ("lesson items per block, mean / max",
     lambda m: f"{m['lesson_items']['mean']:.2f} / {m['lesson_items']['max']}"
     if m["lesson_items"]["max"] else "0"),
    ("lesson precision", lambda m: precision(m["lesson_precision"])),
    ("items naming a foreign detail", lambda m: frac(m["foreign"], pct=False)),
    ("tokens per iteration", lambda m: n(m["tokens_per_iteration"])),
    ("recall p50 / p95", lambda m: f"{g(m['recall_ms']['p50'])} / {g(m['recall_ms']['p95'])} ms"
     if m["recall_ms"].get("p50") is not None else DASH),
    ("replay wall time", lambda m: f"{m['wall_seconds']:.1f} s"),
)
TITLES = {"mini-swe-agent": "mini-swe-agent", "mini-swe-agent-dev": "mini-swe-agent-dev",
          "debugbench": "DebugBench"}


def replay_tables(f: dict) -> str:
    parts = []
    for name, s in f["replay"]["sets"].items():
        modes = s["modes"]
        first = next(iter(modes.values()))
        within, cross = first["coverage_within"]["den"], first["coverage_cross"]["den"]
        parts.append(f"{TITLES.get(name, name)}, {n(s['runs'])} runs, {n(s['iterations'])} "
                     f"iterations, {within + cross} repeats ({within} within-run, {cross} "
                     f"cross-run); {s['benign']} benign exits, not failures:\n")
        parts.append(table(["", *modes],
                           [[label, *(cell(m) for m in modes.values())]
                            for label, cell in REPLAY_ROWS]))
        parts.append("")
    return "\n".join(parts).rstrip()


def point(p: dict) -> str:
    window = "all runs" if p["window"] >= 10**6 else f"window {p['window']}"
    return f"k {p['k']}, follow {p['follow']:g}, {window}"


def coverage_pair(matched: dict, key: str) -> str:
    figures = matched["keys"][key]
    mode = figures["mode"]
    pool, best = max(figures["matched"].items(), key=lambda kv: kv[1]["covered"])
    return (f"{mode['covered']}/{mode['repeats']} ({precision_of(mode)}) vs {best['covered']}"
            f" ({precision_of(best)}, {pool})")


def precision_of(t: dict) -> str:
    return DASH if t["precision"] is None else f"precision {100 * t['precision']:.1f}%"


HOUSE_RULES = "### House rules, judged on repositories they were not tuned on"


def house_rules_table(f: dict) -> str:
    """Each held-out fold: the point chosen on the others, and by each key and reading the
    mode's cross-run coverage and precision against the best popularity list's."""
    rows = []
    for name, s in f["house_rules"]["sets"].items():
        for c in s["chosen"]:
            rows.append([f"{TITLES.get(name, name)}, fold {c['fold']}", c["point"],
                         *(verdict_cell(c["keys"][key][reading])
                           for key in ("group", "signature") for reading in ("block", "run"))])
    chosen = table(["held-out fold", "chosen on the others", "by group, block before",
                    "by group, anywhere earlier", "by signature, block before",
                    "by signature, anywhere earlier"], rows)
    return chosen + "\n\n" + house_rules_points(f["house_rules"]["sets"])


def house_rules_points(sets: dict) -> str:
    """Each point: the readings the house rules held of each set's, and beside them the
    readings each popularity list held, judged the same way."""
    def cell(s: dict, point: str) -> str:
        return f"{s['held'][point]}; lists: " + ", ".join(
            f"{pool} {n}" for pool, n in s["lists_held"][point].items())
    names = list(sets)
    return table(["point", *(f"{TITLES.get(n, n)}: readings held" for n in names)],
                 [[point, *(cell(sets[n], point) for n in names)]
                  for point in sets[names[0]]["held"]])


def verdict_cell(figures: dict) -> str:
    mode = figures["mode"]
    pool, best = best_list(figures)
    held = "held" if holds_against(mode, best) else "lost"
    return (f"{mode['covered']}/{mode['repeats']} ({precision_of(mode)}) vs {best['covered']}"
            f" ({precision_of(best)}, {pool}), {held}")


def predictor_tables(f: dict) -> str:
    rows = []
    for name, s in f["predictor"]["sets"].items():
        for r in s["rows"]:
            two = r["second"]
            rows.append([f"{TITLES.get(name, name)}: {r['label']} ({point(r['point'])})",
                         f"{two['log_loss']:.4f}", f"{two['brier']:.5f}",
                         f"{r['blocks']['lesson_items']['mean']:.2f}",
                         coverage_pair(r["matched"], "group"),
                         coverage_pair(r["matched"], "signature")])
    return table(["data set: predictor", "log loss, second half", "Brier, second half",
                  "lesson items a block", "cross-run by group vs best popular list",
                  "by signature"], rows)


def cold_rows(c: dict) -> list[list[str]]:
    """bench/capture_recall.py"""
    cold = c["cold"]
    bare = cold["python -c pass"]["ms"]
    cap, rec = cold["reflect capture"], cold["reflect recall"]
    return [
        [f"capture of a 4 KB traceback, in process, {n(c['stored'])} failures stored",
         f"p50 {g(c['capture_ms']['p50'])} ms, p95 {g(c['capture_ms']['p95'])} ms",
         target("p50 < 2 ms", c["capture_ms"]["p50"] < 2)],
        ["recency recall, in process, same store",
         f"p50 {g(c['recall_ms']['p50'])} ms, p95 {g(c['recall_ms']['p95'])} ms",
         target("p50 < 2 ms", c["recall_ms"]["p50"] < 2)],
        ["cold `reflect capture` / `python -c pass`",
         f"{g(cap['ms'])} ms / {g(bare)} ms ({cap['ms'] / bare:.1f}x), peak RSS "
         f"{cap['rss_mb']:.0f} MB",
         target("< 250 ms, < 80 MB", cap["ms"] < 250 and cap["rss_mb"] < 80)],
        ["cold `reflect recall` (both sections)",
         f"{g(rec['ms'])} ms ({rec['ms'] / bare:.1f}x), peak RSS {rec['rss_mb']:.0f} MB",
         target("< 250 ms, < 80 MB", rec["ms"] < 250 and rec["rss_mb"] < 80)],
    ]


def hung_rows(h: dict) -> list[list[str]]:
    """bench/hung_provider.py"""
    hung, none = h["in_process_p50_ms"]["hanging model"], h["in_process_p50_ms"]["no model"]
    cold = h["cold_median_ms"]
    return [
        ["capture with a model provider that never answers, in process",
         f"p50 {g(hung)} ms vs {g(none)} ms with no model ({hung / none:.2f}x)", "the same"],
        ["cold `reflect capture` with that provider (detached worker hanging)",
         f"{g(cold['hanging model'])} ms vs {g(cold['no model'])} ms with no model",
         "the same"],
    ]


def lesson_rows(r: dict) -> list[list[str]]:
    """bench/recall.py"""
    big, small, cold = r["stores"]["100000"], r["stores"]["10000"], r["cold"]
    ratio = cold["ms"] / cold["numpy_ms"]
    return [
        [f"recall with lessons, in process, 100,000 lessons in {n(big['runs'])} runs, cached "
         f"goal vector, {big['goals']} real goals",
         f"p50 {g(big['p50'])} ms, p95 {g(big['p95'])} ms",
         target("p95 < 20 ms", big["p95"] < 20)],
        [f"recall with lessons, in process, 10,000 lessons in {n(small['runs'])} runs",
         f"p50 {g(small['p50'])} ms, p95 {g(small['p95'])} ms", ""],
        [f"cold `reflect recall`, 10,000 lessons in {n(small['runs'])} runs (maps the "
         "run-goal index)",
         f"{g(cold['ms'])} ms, {ratio:.2f}x `python -c \"import numpy\"` "
         f"({g(cold['numpy_ms'])} ms), peak RSS {cold['rss_mb']:.0f} MB",
         target("≤ 1.3x `import numpy`", ratio <= 1.3)],
    ]


def search_rows(s: dict) -> list[list[str]]:
    """bench/search.py"""
    found = s["search"]

    def each(key: str, fmt: str) -> str:
        return " / ".join(format(x[key], fmt) for x in found)

    ratios = " / ".join(f"{x['search_ms'] / x['bound_ms']:.2f}x" for x in found)
    sizes = " / ".join(_count(x["vectors"]) for x in found)
    m, hashing = s["embedding"]["minilm"], s["embedding"]["hash"]
    return [
        [f"exact top-{s['k']} search, {sizes} vectors (dim {s['dim']})",
         " / ".join(g(x["search_ms"]) for x in found) + f" ms: {ratios} the time of `M.max()` "
         f"over the same matrix ({each('search_gbps', '.0f')} against "
         f"{each('bound_gbps', '.0f')} GB/s)",
         target("within 1.5x", all(x["search_ms"] <= 1.5 * x["bound_ms"] for x in found))],
        [f"embedding, bundled {m['name']} on the CPU",
         f"{g(m['single_ms'])} ms a single text; {n(m['batch32_per_s'])} texts/s batched "
         f"by 32 (model load {s['embedding']['model_load_s']:.1f} s)", ""],
        ["embedding, hashing fallback",
         f"{g(hashing['single_ms'])} ms a text; {n(hashing['batch32_per_s'])} texts/s", ""],
    ]


def replay_speed_rows(r: dict) -> list[list[str]]:
    """bench/replay.py"""
    if "mini-swe-agent-dev" not in r["sets"]:
        return []
    wall = r["sets"]["mini-swe-agent-dev"]["modes"]["on"]["wall_seconds"]
    return [["replay of all of mini-swe-agent-dev, mode `on`", f"{wall:.1f} s",
             target("< 120 s", wall < 120)]]


SPEED_ROWS = (("capture_recall", cold_rows), ("hung_provider", hung_rows),
              ("recall", lesson_rows), ("search", search_rows), ("replay", replay_speed_rows))


def speed_table(f: dict) -> str:
    """The rows of the benches that ran, in the README's order."""
    rows = [row for name, draw in SPEED_ROWS if name in f for row in draw(f[name])]
    return table(["what", "figure", "target"], rows)


def _count(vectors: int) -> str:
    return f"{vectors // 1_000_000}M" if vectors >= 1_000_000 else f"{vectors // 1000}k"


def store_table(f: dict) -> str:
    s = f["store_bound"]
    fill, once, older, again = s["fill"], s["consolidate"], s["older"], s["again"]
    kept = "every lesson kept" if once["lessons"] == fill["lessons"] else (
        f"{n(fill['lessons'] - once['lessons'])} lessons removed")
    return table(["", "store", "failures", "took"], [
        [f"{n(fill['captures'])} captures, {n(fill['lessons'])} lessons",
         f"{fill['mb']:.1f} MB", n(fill["failures"]), f"{fill['seconds']:.0f} s"],
        [f"`consolidate`: {n(once['deleted_failures'])} failures and "
         f"{n(once['deleted_injections'])} injections dropped, {kept}",
         f"{once['mb']:.1f} MB ({once['reclaimed_mb']:.1f} MB given back)",
         n(once["failures"]), f"{once['seconds']:.2f} s"],
        ["the same store made by an older version: converted by one `VACUUM` and consolidated",
         f"{older['mb']:.1f} MB", n(older["failures"]), f"{older['seconds']:.2f} s"],
        [f"{n(again['captures'])} more captures, then `consolidate` again",
         f"{again['grown_mb']:.1f} MB, then {again['mb']:.1f} MB", n(again["failures"]),
         f"{again['seconds']:.2f} s"],
    ])


def passed(t: dict | None, text: str = "0") -> str:
    if t is None:
        return "not run"
    if t["failed"] or t["errors"] or not t["passed"]:
        return f"{t['failed'] + t['errors']} of {t['passed'] + t['failed'] + t['errors']} " \
               "tests failed"
    return text + (f" ({t['skipped']} skipped here)" if t["skipped"] else "")


def total(t: dict | None) -> str:
    return DASH if t is None else f"{sum(t.values())} tests"


def pytest_cmd(files: tuple[str, ...]) -> str:
    return f"`.venv/bin/python -m pytest {' '.join(files)}`"


ATTACKS_CMD = "`.venv/bin/python bench/attacks.py`"


def faults_table(f: dict) -> str:
    a = f["attacks"]
    return table(["tried", "how many", "lost, leaked or passed", "reproduce"], [
        ["secret kinds, each in every field (error text, action, goal, phase, crash fields, "
         "exception, outcome action, teach, quarantine reason), read back from every output "
         "(store bytes, WAL, pending files, recall text and JSON, `failures show`, exports, "
         "the model's request body)", n(a["secrets"]), passed(f.get("leaks")),
         pytest_cmd(LEAKS)],
        ["the same secrets wrapped (20-39 columns; 80 with an indented or a backslash "
         "continuation), URL-encoded, base64 inside JSON (docs/security.md)", n(a["secrets"]),
         n(a["leaked_whole"] + a["leaked_forms"]), ATTACKS_CMD],
        ["look-alikes that must survive (MySQL's `(using password: YES)`, `token=None`, "
         "`api_key=os.environ[…]`, type annotations, hashes, ids, versions, `fe80::1`)",
         n(a["look_alikes"] + a["look_alikes_wide"]),
         f"{a['look_alikes_changed'] + a['look_alikes_wide_changed']} changed", ATTACKS_CMD],
        ["hostile lessons (`curl … && bash`, `base64 -d \\| sh`, `exec(urlopen…)`, foreign "
         "package index, `core.hooksPath`, `rm -rf .git`, `sed` deleting asserts, `sudo bash`, "
         "reverse shells, pushes to main, `\\|\\| true`, `verify=False`, `ssh-copy-id`), by "
         "model, import (with its resolution) and `teach`", n(a["hostile"]),
         f"{passed(f.get('hostile'))} recalled"
         + (f" ({a['hostile_missed']} missed by `hostile_reason`)" if a["hostile_missed"] else "")
         + f"; {a['benign']} benign look-alikes, {a['benign_flagged']} quarantined",
         pytest_cmd(HOSTILE)],
        ["instruction-like payloads (fullwidth, Cyrillic, zero-width, bidi, escapes, "
         "`<\\|im_start\\|>`, `[INST]`, mid-line `SYSTEM:`, leetspeak, spaced-out letters, "
         "other languages) through "
         "`reflect.capture.defuse.neutralize`", n(a["payloads"]),
         f"{a['payloads'] - a['payloads_neutralized']} passed", ATTACKS_CMD],
        ["faults: the write lock held across captures of several processes and this one, the "
         "lock coming and going under 4 writers, a replay killed mid-file, a torn line, exit "
         "codes and iterations past 64 bits (`1e20`, `2**63`, `1e23` in a crash file), "
         "`--limit 1e20`, `/dev/zero`, `/dev/urandom`, a FIFO without a writer, a pipe that "
         "never ends, `reflect import /dev/zero`, a newer schema", total(f.get("faults")),
         passed(f.get("faults"), "0 failures lost"), pytest_cmd(FAULTS)],
        ["faults of the store itself: a `reflect.db` overwritten by a foreign file, one with "
         "damaged pages, a newer schema under `--repair`, a full disk (a 1 MB tmpfs filled "
         "under a real process; skipped where `unshare` is not allowed), `lessons list` and "
         "`injections` with `--limit 1e20`, the bound and the space given back",
         total(f.get("store_faults")),
         passed(f.get("store_faults"), "0 failures lost; each fault named, with what to do"),
         pytest_cmd(STORE_FAULTS)],
    ])


def team_table(f: dict) -> str:
    t = f["team"]
    pg, lite = t["backends"]["postgresql"], t["backends"]["sqlite"]
    rows = [
        ["failures stored of those captured",
         *(f"{b['stored']}/{b['expected']}" for b in (pg, lite))],
        ["jobs done / provider calls / model lessons",
         *(f"{b['jobs done']} / {b['provider calls']} / {b['model lessons']}"
           for b in (pg, lite))],
        ["captures a second, all processes", *(g(b["captures/s"]) for b in (pg, lite))],
        ["capture p50 / p95", *(f"{g(b['capture p50 ms'])} / {g(b['capture p95 ms'])} ms"
                                for b in (pg, lite))],
        ["queue drained after", *(f"{g(b['drained s'])} s" for b in (pg, lite))],
    ]
    return table([f"{t['capturers']} capturing processes, {t['workers']} workers, "
                  f"{t['failures']} failures", "PostgreSQL", "SQLite"], rows)


def holdout_block(f: dict) -> str:
    h = f["holdout"]
    return "\n".join(["```", *h["summary"], "```"])


# README section -> (the steps it needs, its renderer)
SECTIONS = (
    ("## The two commands", ("demo",), demo_block),
    ("### What a hook costs", ("hooks",), hooks_table),
    ("### Figures (replays of ../shared/data: `.venv/bin/python bench/replay.py`)",
     ("replay",), replay_tables),
    ("### How the predictor was tuned", ("predictor",), predictor_tables),
    (HOUSE_RULES, ("house_rules",), house_rules_table),
    ("## Measured speed", ("capture_recall", "hung_provider", "recall", "search", "replay"),
     speed_table),
    ("## Storage and durability", ("store_bound",), store_table),
    ("## A shared PostgreSQL store", ("team",), team_table),
    ("## What it costs", ("holdout",), holdout_block),
    ("## Faults and attacks, measured", ("attacks",), faults_table),
)


def render(figures: dict) -> str:
    """The README's tables from the figures at hand (a section whose steps all failed or
    were not run is left out; a table missing some of its rows says so)."""
    parts = []
    for heading, needs, draw in SECTIONS:
        have = [name for name in needs if name in figures]
        if not have:
            continue
        missing = [name for name in needs if name not in figures]
        parts.append(heading + (f"  (without {', '.join(missing)})" if missing else ""))
        parts.append("")
        if draw is speed_table or len(have) == len(needs):
            parts.append(draw(figures))
        parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="comma-separated steps to run: "
                   + ", ".join(s.name for s in STEPS))
    p.add_argument("--keep", metavar="DIR", type=Path,
                   help="also keep each step's figures as DIR/NAME.json (written, never read back)")
    args = p.parse_args(argv)
    chosen = set(args.only.split(",")) if args.only else {s.name for s in STEPS}
    unknown = chosen - {s.name for s in STEPS}
    if unknown:
        p.error(f"unknown step {', '.join(sorted(unknown))}; choose from "
                + ", ".join(s.name for s in STEPS))
    print(f"data: {DATA} (REFLECT_DATA); python: {sys.executable}")
    figures, took, failed = {}, {}, []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="reflect-figures-") as tmp:
        where = Path(tmp)
        if args.keep:
            where = args.keep
            where.mkdir(parents=True, exist_ok=True)
        for step in STEPS:
            if step.name not in chosen:
                continue
            (where / f"{step.name}.json").unlink(missing_ok=True)
            result, took[step.name] = run(step, where)
            if args.keep and result is not None and step.read is not None:
                (where / f"{step.name}.json").write_text(json.dumps(result), encoding="utf-8")
            if result is None:
                failed.append(step.name)
            else:
                figures[step.name] = result
    elapsed = time.perf_counter() - started
    print("\n\n======== the README's tables, from this run ========\n")
    print(render(figures))
    print("took: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in took.items())
          + f"; in all {elapsed / 60:.1f} min")
    if failed:
        print(f"FAILED: {', '.join(failed)} (their figures are left out above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
