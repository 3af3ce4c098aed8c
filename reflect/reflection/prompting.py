"""Build the messages that ask a model to turn a failure into a lesson.

Templates are plain text a person can read and tune (``prompts/*.txt``, shipped as
``reflect.prompts``; ``$REFLECT_PROMPTS`` names a directory that overrides them). They use
``string.Template`` syntax because the prompt itself shows JSON, whose braces would clash
with ``str.format``. Every value is bounded and inserted as a JSON string literal, with
``</`` escaped so quoted error text can never close the block that holds it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from reflect.base.text import clip
from reflect.capture.heuristics import CATEGORIES, GUIDANCE_MAX, TRIGGER_MAX
from reflect.capture.review import KINDS

__all__ = ["load_template", "reflection_messages"]

USER_MARKER = "=== user ==="  # splits a template into the system and the user message
MAX_EARLIER = 5
# Characters kept of each field. The goal can be a whole issue text: its start says the most.
FIELD_LIMITS = {
    "error_type": 120,
    "message": 1500,
    "signature": 500,
    "phase": 40,
    "goal": 1500,
    "action": 500,
}
# A lesson's texts at the caps every lesson is held to.
EARLIER_LIMITS = {"error_type": 120, "message": 300, "guidance": GUIDANCE_MAX}
HYPOTHESIS_LIMITS = {"trigger": TRIGGER_MAX, "guidance": GUIDANCE_MAX, "category": 40}
RESOLUTION_LIMIT = 500


def load_template(name: str, override: str = "") -> str:
    """The template ``<name>.txt``: from the directory ``override`` (``REFLECT_PROMPTS``,
    ``ModelSettings.prompts``) when it holds one, else shipped.

    Leading ``#`` comment lines are stripped.
    """
    path = Path(override).expanduser() / f"{name}.txt" if override else None
    if path is not None and path.is_file():
        text = path.read_text(encoding="utf-8")
    else:
        text = resources.files("reflect.prompts").joinpath(f"{name}.txt").read_text("utf-8")
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def reflection_messages(
    failure: Mapping[str, Any], earlier: Sequence[Mapping[str, Any]],
    heuristic: Mapping[str, Any], resolution: str = "", prompts: str = ""
) -> list[dict[str, str]]:
    """OpenAI-style system and user messages for one failure.

    Only the named keys of each dict are read, so a field the caller did not mean to send
    cannot leak into the prompt.
    """
    values = {key: _quote(failure.get(key), limit) for key, limit in FIELD_LIMITS.items()}
    values["earlier"] = "\n".join(_json_line(e, EARLIER_LIMITS) for e in earlier[:MAX_EARLIER])
    values["earlier"] = values["earlier"] or "none"
    values["hypothesis"] = _json_line(heuristic, HYPOTHESIS_LIMITS)
    values["resolution"] = _quote(resolution, RESOLUTION_LIMIT) if resolution else "null"
    values["categories"] = ", ".join(CATEGORIES)
    values["kinds"] = ", ".join(KINDS)

    template = load_template("reflection", prompts)
    system, marker, user = template.partition(USER_MARKER)
    if not marker:
        raise ValueError(
            f"the reflection template has no {USER_MARKER!r} line: add it between the "
            "system and the user message (see the shipped prompts/reflection.txt)"
        )
    try:
        return [
            {"role": "system", "content": Template(system).substitute(values).strip()},
            {"role": "user", "content": Template(user).substitute(values).strip()},
        ]
    except (KeyError, ValueError) as e:
        raise ValueError(
            f"the reflection template uses an unknown placeholder or a stray $ ({e}): "
            f"use only ${', $'.join(values)} and write $$ for a literal dollar"
        ) from None


def _bound(value: object, limit: int) -> str:
    return clip(value if isinstance(value, str) else "" if value is None else str(value), limit)


def _escape(encoded: str) -> str:
    # "<\/" is valid JSON for "</": the quoted data cannot close its block.
    return encoded.replace("</", "<\\/")


def _quote(value: object, limit: int) -> str:
    return _escape(json.dumps(_bound(value, limit), ensure_ascii=False))


def _json_line(record: Mapping[str, Any], limits: dict[str, int]) -> str:
    picked = {key: _bound(record.get(key), limit) for key, limit in limits.items()}
    return _escape(json.dumps(picked, ensure_ascii=False))
