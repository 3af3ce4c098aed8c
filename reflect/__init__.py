"""reflect: failure memory for autonomous coding agents."""

from reflect.memory import Memory
from reflect.records import ErrorEntry, Recall, RecallItem

__all__ = ["ErrorEntry", "Memory", "Recall", "RecallItem"]
__version__ = "0.1.0"
