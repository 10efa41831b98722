"""The validation domain of a claim's parameters: the values they may take at all, and the
memory and time their sizes imply. ``check --set`` and :func:`verify.runner.run_claim`
refuse anything outside it before any work, naming the parameter and what is allowed.

A claim declares ``bounds`` (a parameter, or a dotted key of a nested one -> :class:`Bound`)
for what its statement needs: a rate > 0, a cosine threshold in [0, 1), distinct learning
rates. Its :class:`Footprint` says what its sizes cost. Its stress ``space`` is a region
inside the bounds (``tests/quality/test_spaces.py``).

>>> interval(0, 1, "[)").problem(1.0)
'must be in [0, 1)'
>>> distinct().problem((0.01, 0.01)) is not None, positive().problem(0.5)
(True, None)
>>> Footprint(memory=(("n", "n"),)).bytes({"n": 1000})
8000000.0
"""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Bytes per array entry in a footprint: float64, the verification dtype (float32 halves it).
BYTES_PER_ITEM = 8
#: The most elementwise float64 operations (a draw, an exp, a multiply-add into a mean) one
#: CPU-second does. Measured here: Lemma 4's Monte Carlo mean ran 1.1e8 per CPU-second and
#: a bare torch.exp 1.8e8 (torch 2.13 CPU, one thread, AMD EPYC); 1e9 leaves a factor of 5
#: for faster machines, so the time a footprint gives is a lower bound.
OPERATIONS_PER_CPU_SECOND = 1e9


@dataclass(frozen=True)
class Bound:
    """The values one parameter may take: an interval for a number (each item of a sequence
    of numbers), and for a sequence, whether its items must differ. ``why`` says what the
    claim's statement loses outside it; it ends the refusal's message."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    distinct: bool = False
    why: str = ""

    def describe(self) -> str:
        """What is allowed, as a refusal says it: ``> 0``, ``>= 2``, ``in (0, 1]``."""
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return "any value"

    def _outside(self, x: float) -> bool:
        return ((self.low is not None and (x < self.low or self.low_open and x == self.low))
                or (self.high is not None
                    and (x > self.high or self.high_open and x == self.high)))

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is outside (``must be ...``), or None. ``None`` (a declared "off")
        and values of other kinds pass: the type checks come first (:mod:`verify.runner`)."""
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if self.distinct and len({repr(v) for v in items}) < len(items):
            return "must have distinct values (a repeated value repeats the same run)"
        if any(isinstance(x, numbers.Real) and not isinstance(x, bool) and self._outside(x)
               for x in items):
            return f"must be {self.describe()}" if not isinstance(value, (list, tuple)) \
                else f"must have every value {self.describe()}"
        return None


def positive(why: str = "") -> Bound:
    """A number > 0 (a rate, a scale, a time)."""
    return Bound(low=0, low_open=True, why=why)


def minimum(low: float, why: str = "") -> Bound:
    """A number >= ``low`` (a size below which the statement is empty)."""
    return Bound(low=low, why=why)


def interval(low: float, high: float, ends: str = "[]", why: str = "") -> Bound:
    """A number between ``low`` and ``high``; ``ends`` is ``"[]"``, ``"[)"``, ``"(]"`` or
    ``"()"``, as an interval is written."""
    if ends not in ("[]", "[)", "(]", "()"):
        raise ValueError(f"ends: {ends!r} is not one of [], [), (], ()")
    return Bound(low=low, high=high, low_open=ends[0] == "(", high_open=ends[1] == ")",
                 why=why)


def distinct(why: str = "") -> Bound:
    """A sequence whose values differ (learning rates, sizes of a trend)."""
    return Bound(distinct=True, why=why)


def value_at(params: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of ``params`` (None where a key is absent)."""
    node: Any = params
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _size(value: Any) -> int:
    """A size parameter's count: an integer itself, a sequence its length (cases, rhos)."""
    if isinstance(value, (list, tuple)):
        return len(value)
    return int(value) if isinstance(value, numbers.Integral) else 1


Shape = Sequence["str | int"]


@dataclass(frozen=True)
class Footprint:
    """What a check's sizes cost, as products of its parameters (dotted names allowed; an
    integer is a constant; a sequence counts its items).

    ``memory``: the shapes of the largest arrays a check holds at once (float64);
    ``work``: the elementwise operations it does, in the same form (at most
    :data:`OPERATIONS_PER_CPU_SECOND` a CPU-second, so their time is a lower bound).
    """

    memory: tuple[Shape, ...] = ()
    work: tuple[Shape, ...] = ()

    def names(self) -> set[str]:
        return {d for shape in (*self.memory, *self.work) for d in shape if isinstance(d, str)}

    @staticmethod
    def _count(shapes: Sequence[Shape], params: Mapping[str, Any]) -> float:
        return float(sum(math.prod(d if isinstance(d, int) else _size(value_at(params, d))
                                   for d in shape) for shape in shapes))

    def bytes(self, params: Mapping[str, Any]) -> float:
        return BYTES_PER_ITEM * self._count(self.memory, params)

    def cpu_seconds(self, params: Mapping[str, Any]) -> float:
        return self._count(self.work, params) / OPERATIONS_PER_CPU_SECOND


def physical_memory() -> int | None:
    """This machine's memory in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def footprint_problem(footprint: Footprint, params: Mapping[str, Any],
                      time_limit: float | None = None) -> str | None:
    """Why ``params`` cannot run here (its arrays exceed this machine's memory, or its work
    the ``time_limit`` in CPU seconds), with the estimate; None when they fit."""
    memory = physical_memory()
    need = footprint.bytes(params)
    if memory is not None and need > memory:
        largest = max(footprint.memory, key=lambda s: Footprint._count([s], params))
        return (f"needs about {need / 2**30:.3g} GiB of float64 arrays (the largest "
                f"{' x '.join(map(str, largest))}), more than this machine's "
                f"{memory / 2**30:.3g} GiB")
    seconds = footprint.cpu_seconds(params)
    if time_limit is not None and seconds > time_limit:
        return (f"needs at least {seconds:,.0f} CPU-s ({seconds / 3600:.3g} h: "
                f"{seconds * OPERATIONS_PER_CPU_SECOND:.2g} operations at most "
                f"{OPERATIONS_PER_CPU_SECOND:.0e} a CPU-second), more than the time limit of "
                f"{time_limit:g} CPU-s (--time-limit)")
    return None
