"""Evaluation: replay recorded failure traces and compare memory on, recency-only and off.

The public names are these; the modules behind them are internal. Each is loaded on first
use: the command line imports this package's ``cli`` on every command."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from reflect.eval._ab import run_ab
    from reflect.eval._cli import add_eval_command
    from reflect.eval._compare import compare
    from reflect.eval._convert import convert
    from reflect.eval._replay import replay
    from reflect.eval._trace import TraceRecord, read_trace, write_trace

__all__ = ["TraceRecord", "add_eval_command", "compare", "convert", "read_trace", "replay",
           "run_ab", "write_trace"]

_HOMES = {"add_eval_command": "_cli", "run_ab": "_ab", "compare": "_compare",
          "convert": "_convert", "replay": "_replay", "TraceRecord": "_trace",
          "read_trace": "_trace", "write_trace": "_trace"}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'reflect.eval' has no attribute {name!r}")
    found: object = getattr(__import__(f"reflect.eval.{_HOMES[name]}", fromlist=[name]), name)
    return found
