"""The attack corpora of tests/ against the product's own code: secrets in every form,
look-alikes, hostile lessons, instruction-like payloads. Prints what was tried and what
got through.

Then the resident helper's cases and `reflect learn`'s, as real processes
(bench/helper_attacks.py, bench/learn_attacks.py), and those of captures,
transcripts and the store directory (bench/capture_attacks.py), and a shared store's
(bench/member_attacks.py).

Run: .venv/bin/python bench/attacks.py [--show] [--hooks N] [--sessions N]   (--show names
what got through; --hooks and --sessions: the hooks and the learns' sessions at once)
Target: each 64 KB input built to make a backtracking regex blow up scrubbed in under 500 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from capture_attacks import main as capture_cases
from capture_recall import traceback_4kb
from figures import emit
from helper_attacks import main as helper_cases
from hostile_corpus import BENIGN_LESSONS, HOSTILE_LESSONS
from learn_attacks import main as learn_cases
from look_alike_corpus import LOOK_ALIKES_WIDE
from member_attacks import main as member_cases
from secret_corpus import LOOK_ALIKES, SECRETS
from secret_forms import FORMS, leaks
from test_defuse import PAYLOADS
from test_scrub import PATHOLOGICAL

from reflect.capture.defuse import NEUTRALIZED, neutralize
from reflect.capture.review import hostile_reason
from reflect.capture.scrub import Scrubber

SCRUB = Scrubber()
PATHOLOGICAL_MS = 500  # a 64 KB input built to backtrack, scrubbed
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--show", action="store_true", help="name what got through")
parser.add_argument("--hooks", type=int, default=50,
                    help="hooks started at once, cold and through the helper (50)")
parser.add_argument("--sessions", type=int, default=50,
                    help="sessions four learns read at once (50)")
args = parser.parse_args()
SHOW = args.show


def scrubbed(text: str) -> str:
    return SCRUB.scrub(text)[0]


print(f"secret kinds tried {len(SECRETS)}; kinds caught in every text of the form:")
leaked_by_form = {}
for form in FORMS:
    leaked = [kind for kind, (secret, line) in SECRETS.items()
              if leaks(scrubbed, secret, line, form)]
    leaked_by_form[form] = leaked
    print(f"  {form:40} {len(SECRETS) - len(leaked):4} of {len(SECRETS)}"
          + (f"  leaked: {' '.join(leaked)}" if SHOW and leaked else ""))
changed = [t for t in LOOK_ALIKES if scrubbed(t) != t]
wide = [t for t in LOOK_ALIKES_WIDE if scrubbed(t) != t]
print(f"look-alikes tried {len(LOOK_ALIKES)}: changed {len(changed)} {changed or ''}")
# the same lines as one log: a wrap is looked for between lines, and must not join them
log = [line for text in LOOK_ALIKES_WIDE + LOOK_ALIKES for line in text.split("\n")]
in_log = [a for a, b in zip(log, scrubbed("\n".join(log)).split("\n"), strict=True) if a != b]
print(f"realistic look-alikes tried {len(LOOK_ALIKES_WIDE)}: changed {len(wide)}; "
      f"all {len(log)} as one log: lines changed {len(in_log)}")
if SHOW:
    for text in wide:
        print(f"    {text!r} -> {scrubbed(text)!r}")
    for text in in_log:
        print(f"    in the log: {text!r}")
missed = [t for t in HOSTILE_LESSONS if not hostile_reason(t)]
flagged = [t for t in BENIGN_LESSONS if hostile_reason(t)]
print(f"hostile lessons tried {len(HOSTILE_LESSONS)}: not quarantined {len(missed)};"
      f" benign look-alikes {len(BENIGN_LESSONS)}: quarantined {len(flagged)}")
passed = [p for p in PAYLOADS if NEUTRALIZED not in neutralize(p)]
print(f"injection payloads tried {len(PAYLOADS)}: neutralized {len(PAYLOADS) - len(passed)}")
# what reading every form costs a capture: the scrub of a 4 KB traceback
tracebacks = [traceback_4kb(i) for i in range(200)]
for text in tracebacks:
    SCRUB.scrub(text)
took = []
for text in tracebacks:
    start = time.perf_counter()
    SCRUB.scrub(text)
    took.append((time.perf_counter() - start) * 1000)
print(f"scrub of a 4 KB traceback: p50 {statistics.median(took):.2f} ms")
# inputs built to make a backtracking regex blow up: each unit repeated to 64 KB, best of 3
worst = {}
for unit in PATHOLOGICAL:
    text = unit * (65536 // len(unit))
    best = []
    for _ in range(3):
        start = time.perf_counter()
        SCRUB.scrub(text)
        best.append((time.perf_counter() - start) * 1000)
    worst[unit] = min(best)
print("scrub of 64 KB built to backtrack, ms: " + "  ".join(
    f"{unit.strip()!r} {ms:.0f}" for unit, ms in worst.items()))
# linear, not backtracking: a backtracking regex takes seconds on these
print(f"  slowest {max(worst.values()):.0f} ms (target < {PATHOLOGICAL_MS} ms): "
      + ("met" if max(worst.values()) < PATHOLOGICAL_MS else "MISSED"))
helper = helper_cases(args.hooks)
learned = learn_cases(args.sessions)
captured = capture_cases()
shared = member_cases()
emit({"helper": helper, "learn": learned, "capture": captured, "shared_store": shared,
      "scrub_4kb_ms": statistics.median(took),
      "scrub_64kb_pathological_max_ms": max(worst.values()), "secrets": len(SECRETS),
      "leaked_whole": len(leaked_by_form["whole"]),
      "leaked_wrapped": len(set().union(*(v for k, v in leaked_by_form.items()
                                          if k.startswith("wrapped")))),
      "leaked_by_form": {k: len(v) for k, v in leaked_by_form.items()},
      "leaked_forms": len(set().union(*(v for k, v in leaked_by_form.items() if k != "whole"))),
      "look_alikes": len(LOOK_ALIKES), "look_alikes_changed": len(changed),
      "look_alikes_wide": len(LOOK_ALIKES_WIDE), "look_alikes_wide_changed": len(wide),
      "look_alikes_log": len(log), "look_alikes_log_changed": len(in_log),
      "hostile": len(HOSTILE_LESSONS), "hostile_missed": len(missed),
      "benign": len(BENIGN_LESSONS), "benign_flagged": len(flagged),
      "payloads": len(PAYLOADS), "payloads_neutralized": len(PAYLOADS) - len(passed)})
