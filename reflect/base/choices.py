"""The names the command line offers as choices, each list defined once: the library
checks what it is given against the same lists, and the CLI reads them without
importing the modules that use them (a hook's process builds its parser from here).
"""

from __future__ import annotations

OUTPUT_FORMATS = ("text", "json")  # --format: for a person, or the API object's fields
EXPORT_FORMATS = ("markdown", "jsonl")  # `reflect export`: to read, or to import elsewhere
TRACE_FORMATS = ("mini-swe-agent", "reflexion", "debugbench", "claude-code", "codex")  # logs
# `eval convert` reads
LEARN_CLIENTS = ("claude-code", "codex")  # `reflect learn`: the clients whose sessions it reads
MEMORY_MODES = ("on", "recency", "off")  # all sections / this run's failures / none: `eval ab`
BASELINE_MODES = ("last3", "popular")  # trivial blocks a replay compares memory with
REPLAY_MODES = (*MEMORY_MODES, *BASELINE_MODES)  # `eval replay --mode`
# `recall --semantic`: vectors the worker made (the rest queued) / the embedding model here
SEMANTIC_MODES = ("cached", "wait")
