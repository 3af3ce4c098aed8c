"""The attack corpora of tests/ against the product's own code: secrets, hostile lessons,
instruction-like payloads. Prints what was tried and what got through.

Run: .venv/bin/python bench/attacks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from figures import emit
from hostile_corpus import BENIGN_LESSONS, HOSTILE_LESSONS
from secret_corpus import LOOK_ALIKES, SECRETS
from test_defuse import PAYLOADS

from reflect.defuse import NEUTRALIZED, neutralize
from reflect.review import hostile_reason
from reflect.scrub import Scrubber

SCRUB = Scrubber()


def leaks_when_wrapped(secret: str, line: str) -> bool:
    text = "x" * 70 + " " + line
    start = text.index(secret)
    for cut in range(start + 4, start + len(secret) - 4, 7):
        if " " in text[cut - 1:cut + 1]:
            continue
        out = SCRUB.scrub(text[:cut] + "\n" + text[cut:])[0]
        if any(len(h) >= 8 and h in out for h in (text[start:cut], text[cut:start + len(secret)])):
            return True
    return False


whole = [k for k, (s, line) in SECRETS.items() if s in SCRUB.scrub(line)[0]]
wrapped = [k for k, (s, line) in SECRETS.items() if leaks_when_wrapped(s, line)]
changed = [t for t in LOOK_ALIKES if SCRUB.scrub(t)[0] != t]
print(f"secret kinds tried {len(SECRETS)}: leaked whole {len(whole)}, leaked when wrapped"
      f" {len(wrapped)} {whole + wrapped or ''}")
print(f"look-alikes tried {len(LOOK_ALIKES)}: changed {len(changed)} {changed or ''}")
missed = [t for t in HOSTILE_LESSONS if not hostile_reason(t)]
flagged = [t for t in BENIGN_LESSONS if hostile_reason(t)]
print(f"hostile lessons tried {len(HOSTILE_LESSONS)}: not quarantined {len(missed)};"
      f" benign look-alikes {len(BENIGN_LESSONS)}: quarantined {len(flagged)}")
passed = [p for p in PAYLOADS if NEUTRALIZED not in neutralize(p)]
print(f"injection payloads tried {len(PAYLOADS)}: neutralized {len(PAYLOADS) - len(passed)}")
emit({"secrets": len(SECRETS), "leaked_whole": len(whole), "leaked_wrapped": len(wrapped),
      "look_alikes": len(LOOK_ALIKES), "look_alikes_changed": len(changed),
      "hostile": len(HOSTILE_LESSONS), "hostile_missed": len(missed),
      "benign": len(BENIGN_LESSONS), "benign_flagged": len(flagged),
      "payloads": len(PAYLOADS), "payloads_neutralized": len(PAYLOADS) - len(passed)})
