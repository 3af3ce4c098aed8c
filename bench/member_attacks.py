"""A shared store's attack case: one member's made-up session ids, each a run, among 20
honest runs of four members, through the product's own code (a real SQLite file, a
``Memory`` per member). Each row: whether the planted rule reached a newcomer's house
rules, whether its fix did, and whether the team's rule is still shown (target: planted
0, fix_shown 0, team_rule 1). Imported by bench/attacks.py.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_house_members import Team, planted  # the tests' own team

IDS = (5, 40)


def made_up_ids(tmp: Path, ids: int) -> dict:
    os.environ.update({"REFLECT_HOME": str(tmp / f"shared-{ids}"), "REFLECT_WORKER": "off",
                       "REFLECT_HELPER": "off", "REFLECT_EMBEDDINGS": "off"})
    os.environ.pop("REFLECT_STORE", None)
    with Team() as team:
        team.honest()
        planted(team, ids)
        rules = team.house()
    return {"rules": len(rules),
            "planted": sum("RuntimeError" in t for t in rules),
            "fix_shown": sum("toolchain-bootstrap" in t for t in rules),
            "team_rule": sum("pytest" in t for t in rules)}


def main() -> dict:
    with tempfile.TemporaryDirectory() as name:
        rows = {f"{ids} made-up ids of one member among 20 runs": made_up_ids(Path(name), ids)
                for ids in IDS}
    print("a store shared by several members (planted and fix_shown: 0 is the target):")
    for case, row in rows.items():
        print(f"  {case:44} " + "  ".join(f"{k} {v}" for k, v in row.items()))
    return rows


if __name__ == "__main__":
    main()
