"""``NamedTuple`` without importing typing at run time: a hook's process loads no typing
(~2 ms of a cold one, docs/speed.md). A class statement of annotated fields, defaults and
methods becomes a ``collections.namedtuple`` of those fields, with its methods, docstring
and annotations, as typing's would; mypy reads typing's own, so the checks are typing's."""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing's flag (mypy knows it)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    class _Made(type):
        def __new__(mcs, name, bases, namespace):
            fields = list(namespace.get("__annotations__", {}))
            made = namedtuple(name, fields, module=namespace["__module__"],
                              defaults=[namespace[f] for f in fields if f in namespace])
            for key, value in namespace.items():
                if key not in fields and key != "__module__":
                    setattr(made, key, value)
            return made

    NamedTuple = type.__new__(_Made, "NamedTuple", (), {})  # its subclasses are made

__all__ = ["NamedTuple"]
