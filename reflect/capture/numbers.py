"""Numbers from harnesses and the command line, read leniently and bounded.

SQLite holds signed 64-bit integers: a larger exit code or iteration would make
the insert fail and the failure be lost, and a huge iteration would make the
run's next number overflow. So what is stored is kept within bounds, and text
such as ``1e20`` or ``2**63`` from a shell is read as the number it means.
"""

from __future__ import annotations

import math
import re

from reflect.base.config import warn

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_ITERATION = 2**31 - 1  # no run has more; the run's next number stays far from overflow
_POWER = re.compile(r"\s*(-?\d+)\s*(?:\*\*|\^)\s*(\d{1,4})\s*")
# Past this many digits a number is out of any range here: it is not computed (2**63 has
# 19; "9"*4000 + "**9999" would take minutes, and Python refuses to print such an int).
_MAX_DIGITS = 40
_PAST: int = 10**_MAX_DIGITS


def whole_number(value: object) -> int | None:
    """``value`` as an int: an int, a finite float, or text naming one ("42", "1e20",
    "2**63"); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    digits = value.strip()
    if digits.lstrip("+-").isdigit() and len(digits) > _MAX_DIGITS:
        return -_PAST if digits.startswith("-") else _PAST
    try:
        return int(digits)
    except ValueError:
        pass
    if power := _POWER.fullmatch(value):
        return _power(power[1], int(power[2]))
    try:
        number = float(value)
    except ValueError:
        return None
    return int(number) if math.isfinite(number) else None


def _power(base: str, exponent: int) -> int:
    """base**exponent, or a number past every bound when it has too many digits."""
    negative = base.startswith("-") and exponent % 2 == 1
    digits = base.lstrip("-")
    if len(digits) > _MAX_DIGITS or (
            int(digits) > 1 and exponent * math.log10(int(digits)) > _MAX_DIGITS):
        return -_PAST if negative else _PAST
    power: int = int(base) ** exponent  # exponent >= 0: an int
    return power


def _shown(value: object) -> str:
    """A value for a warning: short, and never an int too long to print."""
    if isinstance(value, int) and abs(value) >= _PAST:
        return f"{'-' if value < 0 else ''}past 10**{_MAX_DIGITS}"
    return repr(value[:60] if isinstance(value, str) else value)


def clamp(value: int, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    return max(low, min(high, value))


def bounded(value: object, what: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int | None:
    """``value`` as an int clamped to [low, high], or None when it names no number; a
    warning says what was done, and the caller goes on."""
    if value is None:
        return None
    number = whole_number(value)
    if number is None:
        warn(f"{what} {_shown(value)} is not a whole number; left out")
        return None
    if not low <= number <= high:
        warn(f"{what} {_shown(number)} is out of range; {clamp(number, low, high)} used")
    return clamp(number, low, high)


def iteration(value: object) -> int | None:
    """A captured iteration, or None (the run's next number) when it is no whole number
    from 0 to MAX_ITERATION: clamping would pile the run's later failures onto one."""
    number = whole_number(value)
    if value is not None and (number is None or not 0 <= number <= MAX_ITERATION):
        warn(f"iteration {_shown(value)} is not a whole number from 0 to {MAX_ITERATION};"
             " the run's next number used")
        return None
    return number
