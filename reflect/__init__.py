"""reflect: failure memory for autonomous coding agents."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a hook ~2 ms to import
if TYPE_CHECKING:
    from reflect.memory import Memory, Settings
    from reflect.records import ErrorEntry, Recall, RecallItem

__all__ = ["ErrorEntry", "Memory", "Recall", "RecallItem", "Settings"]
__version__ = "0.1.0"


def __getattr__(name: str) -> type:
    # Loaded on first use, so a command (a hook) that needs none of the library starts fast.
    if name in ("Memory", "Settings"):
        from reflect import memory

        found_here: type = getattr(memory, name)
        return found_here
    if name in ("ErrorEntry", "Recall", "RecallItem"):
        from reflect import records

        found: type = getattr(records, name)
        return found
    raise AttributeError(f"module 'reflect' has no attribute {name!r}")
