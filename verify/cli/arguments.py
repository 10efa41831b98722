"""Argument types shared by the sub-commands (argparse turns their errors into one line)."""
from __future__ import annotations

import argparse
import math
import os
import re

class UsageError(Exception):
    """Bad input from the user: reported on one line, exit code 2."""


#: The most torch threads --threads accepts: 4 x the machine's CPUs (more only wait on
#: each other, and a typo such as 100000 would start that many).
MAX_THREADS = 4 * (os.cpu_count() or 1)


#: ``A**B`` of two integers, as a size is written (``2**18``, ``10**9``).
_POWER = re.compile(r"\s*(\d{1,6})\s*\*\*\s*(\d{1,3})\s*")


def integer_power(text: str) -> int | None:
    """The integer that ``A**B`` names (None for other text). Python's literal syntax has no
    powers, but sizes are written so; A < 10**6 and B < 1000 keep it instant.

    >>> integer_power("10**9"), integer_power("2 ** 18"), integer_power("2**x")
    (1000000000, 262144, None)
    """
    match = _POWER.fullmatch(text)
    return int(match[1]) ** int(match[2]) if match else None


def positive_int(text: str) -> int:
    """An integer >= 1 (threads, jobs, budgets, batch sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def thread_count(text: str) -> int:
    """An integer in [1, :data:`MAX_THREADS`] (torch intra-op threads)."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(
            f"{value} is more than {MAX_THREADS} (4 x the {os.cpu_count() or 1} CPUs "
            f"of this machine)")
    return value


def time_limit(text: str) -> float:
    """Seconds > 0 (finite), or ``none`` for no limit (returned as ``math.inf``)."""
    if text.strip().lower() == "none":
        return math.inf
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds or 'none'") \
            from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds > 0 "
                                         f"('none' for no limit)")
    return value
