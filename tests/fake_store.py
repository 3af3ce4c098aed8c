"""A fake store for the tests about a store's faults and about what is asked of it: the
``Store`` protocol (reflect/store/protocol.py) answered by the test's real store, with the
faults a test names raised instead, and every call kept. A ``Memory`` takes it through its
own seam, ``Settings(open_store=fake.open)``, and so do the workers it runs: no test
patches a backend's methods."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reflect.store import Store, open_store


class FakeStore:
    """What each store ``open`` gives answers: the methods named in ``faults`` raise their
    exception; every other call goes to the real store (``open_store``'s: the test's own);
    each call, of every store opened, is kept in ``calls`` as (method, arguments, what it
    returned or raised)."""

    def __init__(self, faults: Mapping[str, BaseException] | None = None,
                 refuse_open: BaseException | None = None):
        self.faults = dict(faults or {})
        self.refuse_open = refuse_open  # raised by ``open``: the store cannot be opened
        self.calls: list[tuple[str, tuple[Any, ...], Any]] = []
        self.opened = 0

    def open(self, home: Path, url: str = "", busy_timeout: float = 5.0) -> Store:
        """``Settings.open_store``: a store of this fake's, over the one ``home`` and ``url``
        name."""
        if self.refuse_open is not None:
            raise self.refuse_open
        self.opened += 1
        return _Faulty(self, open_store(home, url, busy_timeout))  # type: ignore[return-value]

    def answers(self, method: str) -> list[Any]:
        """What each call of ``method`` returned (or raised), in order."""
        return [result for name, _, result in self.calls if name == method]


class _Faulty:
    def __init__(self, fake: FakeStore, real: Store):
        self._fake, self._real = fake, real

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._real, name)
        if not callable(found):
            return found
        fake, fault = self._fake, self._fake.faults.get(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if fault is not None:
                fake.calls.append((name, args, fault))
                raise fault
            result = found(*args, **kwargs)
            fake.calls.append((name, args, result))
            return result

        return call
