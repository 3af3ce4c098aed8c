"""The map of the package: its layers, the walls between rooms, and what each room holds.

One declaration with two readers: cog writes docs/design.md's "Layout" from it
(`cog -r -I docs docs/design.md`; `make lint` checks it with `cog --check`), and
tests/test_layers.py holds every import of reflect/ and index/ to it, and every module to
the room whose text names it. A room is a folder of reflect/ (``index/`` is the top-level
folder installed as ``reflect.index``), or one of the package's own two files.
"""

from __future__ import annotations

import textwrap

# Highest first: a module imports only from its own layer or one below it.
LAYERS: dict[int, tuple[str, ...]] = {
    5: ("__init__", "__main__", "cli/", "integrations/", "eval/"),
    4: ("api/",),
    3: ("recall/",),
    2: ("reflection/",),
    1: ("capture/", "store/"),
    0: ("base/", "index/"),
}

# (room, the room it never imports, why)
WALLS: tuple[tuple[str, str, str], ...] = (
    ("store/", "capture/", "the store keeps what capture derived; it derives nothing"),
    ("capture/", "store/", "capture derives before the store, without it"),
    ("integrations/", "store/", "integrations call the public API, never the store"),
)

# What each layer is for, then each folder's modules: every module of a folder (its
# subfolders' too) is named in its text, and each ``x.py`` its text names is one of them.
PURPOSES: dict[int, str] = {
    0: "values and rules that need nothing of the project",
    1: "what a harness gives becomes a record, and records are kept",
    2: "a failure becomes a lesson, and texts become vectors",
    3: "what the agent reads",
    4: "the library API",
    5: "on top: the command, where agents run, the evaluation",
}
HOLDS: dict[str, str] = {
    "base/": (
        "records.py what crosses a boundary: the API's records, the store's typed rows, "
        "jobs; answers.py what ``Memory``'s inspection methods answer (``Status``, "
        "``Stats``, ``LessonDetail``, ``Injection``, ``Consolidation``, ``Progress``); "
        "text.py one way to bound text, make it one line and write an error "
        "(`Type: message`); config.py the kill switch, the model's and embeddings' settings "
        "read from the mapping it is given, the one warning line; home.py where the store "
        "is; member.py who a run is by (a digest); digest.py the digests, without OpenSSL; "
        "named.py typing's NamedTuple, without typing; "
        "lazy.py regular expressions compiled on first use; choices.py the CLI's choices; "
        "output.py how a command prints; limits.py "
        "what a model call must pass (breaker, spend); confidence.py the credit an outcome "
        "earns; supersession.py how lessons replace and merge"),
    "index/": (
        "reflect.index: embedders (embedders.py), the vector index (vectors.py) and "
        "atomic.py, the one writer of a whole file; knows nothing of lessons"),
    "capture/": (
        "everything derived before the store: entry.py parses what a harness gives "
        "(reading.py, numbers.py bound it), extract.py finds the error, benign.py exits that "
        "are not failures, scrub.py secrets out (scrub_rules.py, scrub_views.py), "
        "fingerprint.py the cause and its family, gitconfig.py the repository's owner/name, "
        "scope.py the project's scope, heuristics.py the offline lesson, review.py every "
        "text that may reach a prompt, defuse.py tool text made safe, commands.py what a "
        "command line is made of, resolution.py what worked, details.py what an item may "
        "name, own_module.py whether a missing module is the run's own, tool_calls.py a "
        "client's tool call (its action, when a success reruns a failure); transcripts/ the "
        "sessions Claude Code and Codex keep on disk (lines.py read in bounded memory, "
        "claude_code.py, codex.py), as the tool calls their hooks would have seen"),
    "store/": (
        "the Store protocol (protocol.py) and all SQL; it stores and derives nothing: the "
        "queries both backends share (runs.py; the private _failures.py, _lessons.py, "
        "_credit.py, _jobs.py, _vectors.py, _upkeep.py, _progress.py, _baselines.py) over a "
        "backend's primitives (base.py, _sql.py); sqlite.py with sqlite_migrations.py "
        "(frozen_cause.py: the rule one of them shipped with) and _sqlite_health.py (a "
        "damaged file, a full disk); "
        "postgres.py with postgres_migrations.py; health.py what a doctor finds; pending.py "
        "captures kept aside while the store is away, and their replay"),
    "reflection/": (
        "worker.py the job runner, queue.py the rules of retries, prompting.py the prompt, "
        "gateway.py litellm; embedding.py query vectors; model_lock.py one embedding model "
        "loaded by a user's workers at a time; consolidation.py upkeep: decay and the bound "
        "(``Upkeep``)"),
    "recall/": (
        "the block (block.py), the prediction (predict.py), the holdout (holdout.py), taught "
        "and imported lessons (taught.py), its text (render.py), what a mistake's runs did "
        "about it and whether it was their work (worked.py)"),
    "api/": (
        "context.py ``RunContext``: what a boundary reads of its environment, once; "
        "memory.py ``Memory`` and ``port``, the one way in to its store, scrubber and query "
        "(learn and eval use it; nothing else reaches inside a Memory); settings.py "
        "``Settings``, read from the environment once; controls.py a person's controls; "
        "doctor.py `reflect doctor`; exchange.py export and import; house_file.py the house "
        "rules' marked section in AGENTS.md or CLAUDE.md; repeat_rates.py `reflect "
        "progress`; learn.py `reflect learn`: past sessions captured as the hooks would have"),
    "cli/": (
        "the command: reflect the script installed as `reflect` (an entry point's wrapper "
        "would import re in every hook), launch.py its entry point (and `python -m "
        "reflect`'s), client.py the "
        "thin client a step's process runs while the helper is up (the standard library "
        "only), resident.py the helper that answers those commands warm, hook.py a hook's "
        "command line as installed, answered without the parser, main.py the "
        "command line (lessons.py: lessons and sharing; learn.py `reflect learn`; rules.py "
        "`reflect rules`; arguments.py its types of numbers), pipe.py a reader that closed "
        "its end, demo.py `make demo`"),
    "integrations/": (
        "Claude Code and Codex hooks (hooks.py shared, settings.py installs, clients.py the "
        "clients and their scopes' settings files, claude_code.py, codex.py, rerun.py what "
        "PreToolUse says of a command about to run, heard.py whether installed hooks ever "
        "ran, shown.py what a session was shown, budget.py a hook's one time budget, "
        "event_json.py an event too large or too deep read as far as it goes), "
        "minisweagent.py, mcp.py (mcp_start.py: its `initialize` answered before the SDK's "
        "import), run.py `reflect run`"),
    "eval/": (
        "reflect.eval, its public names in its __init__.py, each module private: _trace.py "
        "the format, _convert.py converters, _replay.py, _metrics.py, _signature.py, "
        "_matched.py and _baselines.py (matched baselines), _compare.py, _ab.py (live A/B), "
        "_scripted.py, _effect.py (the holdout's), _charts.py, _cli.py its commands"),
}


def module_prefix(room: str) -> str:
    """A room as the name its modules start with: ``capture/`` -> ``reflect.capture``,
    ``__init__`` -> ``reflect``."""
    return "reflect" if room == "__init__" else f"reflect.{room.rstrip('/')}"


def layer_table() -> dict[str, int]:
    """Each room's module name prefix and its layer."""
    return {module_prefix(room): number for number, rooms in LAYERS.items() for room in rooms}


def walls() -> set[tuple[str, str]]:
    return {(module_prefix(a), module_prefix(b)) for a, b, _ in WALLS}


def layout() -> str:
    """docs/design.md's "Layout": the layers, the walls and what each room holds."""
    layers = "\n".join(f"layer {n}  {' '.join(rooms)}" for n, rooms in LAYERS.items())
    width = max(len(a) + len(b) for a, b, _ in WALLS) + 4
    fences = "\n".join(f"wall  {f'{a} {b}':<{width}}{why}" for a, b, why in WALLS)
    held = []
    for number in sorted(LAYERS):
        held.append(f"layer {number}, {PURPOSES[number]}")
        for room in LAYERS[number]:
            if room in HOLDS:
                held.append(textwrap.fill(HOLDS[room], 92, initial_indent=f"  {room:<16}",
                                          subsequent_indent=" " * 18))
    return "\n\n".join(f"```\n{block}\n```" for block in (layers, fences, "\n".join(held)))
