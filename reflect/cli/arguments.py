"""The command line's argparse types of numbers: text that names none is a misuse (the
library bounds the rest, ``reflect.capture.numbers``). Apart from the library's rules,
which a hook's capture loads without argparse."""

from __future__ import annotations

from argparse import ArgumentTypeError

from reflect.capture.numbers import clamp, whole_number


def number(text: str) -> int:
    """An argparse type: the whole number the text names, however large (the library
    bounds it); text that names none is a misuse."""
    value = whole_number(text)
    if value is None:
        raise ArgumentTypeError(f"{text!r} is not a whole number")
    return value


def count(text: str) -> int:
    """An argparse type for limits: a whole number, at most what SQLite holds."""
    number = whole_number(text)
    if number is None or number < 0:
        raise ArgumentTypeError(f"{text!r} is not a whole number of 0 or more")
    return clamp(number, 0)
