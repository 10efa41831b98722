"""Argument types shared by the sub-commands (argparse turns their errors into one line)."""
from __future__ import annotations

import argparse
import math
import os

class UsageError(Exception):
    """Bad input from the user: reported on one line, exit code 2."""


#: The most torch threads --threads accepts: 4 x the machine's CPUs (more only wait on
#: each other, and a typo such as 100000 would start that many).
MAX_THREADS = 4 * (os.cpu_count() or 1)


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
