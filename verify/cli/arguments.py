"""Argument types shared by the sub-commands (argparse turns their errors into one line)."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1 (threads, jobs, budgets, batch sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value
