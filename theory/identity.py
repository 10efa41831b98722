r"""Three-valued test of a symbolic identity :math:`\mathrm{lhs} - \mathrm{rhs} \equiv 0`.

Structural ``==`` is not mathematical equality and ``Expr.equals`` may return ``None``, so
the answer here has three values:

* ``ZERO``: every entry of the difference reduces to 0 by targeted steps (``expand``,
  ``together``, ``cancel``), which decide rational functions exactly;
* ``NONZERO``: some entry is nonzero at an exact rational point (a witness is returned);
* ``UNDECIDED``: neither could be shown within the time limit.

Bare ``simplify`` is never called: it can hang on the sums these papers produce.
"""
from __future__ import annotations

import contextlib
import random
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

import sympy as sp


class ZeroStatus(str, Enum):
    ZERO = "zero"
    NONZERO = "nonzero"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class IdentityCheck:
    """Outcome of :func:`is_zero`: status, largest |entry| found at a witness point, method."""

    status: ZeroStatus
    residual: float | None
    method: str
    seconds: float
    witness: dict[str, str] | None = None


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TimeoutError` after ``seconds`` (main thread only; elsewhere no limit)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):  # noqa: ARG001
        raise TimeoutError(f"symbolic step exceeded {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _entries(expr) -> list[sp.Expr]:
    if isinstance(expr, sp.MatrixBase):
        return list(expr)
    return [sp.sympify(expr)]


# Cached: a claim's negative control re-checks the same derived sides (and the stated forms it
# leaves alone), so most of its entries were reduced by the claim's own run. Expressions are
# immutable and hashable; a reduction cut short by the time limit raises and is not cached.
@lru_cache(maxsize=4096)
def _reduce(e: sp.Expr) -> sp.Expr:
    return sp.cancel(sp.together(sp.expand(e)))


#: Objects whose bound variables a plain replacement would wrongly touch: ``subs`` knows them.
_BINDING = (sp.Integral, sp.Derivative, sp.Subs, sp.Sum, sp.Product)


def _value_at(r: sp.Expr, point: dict[sp.Symbol, sp.Rational]) -> sp.Expr:
    """``r`` at an exact rational point, as ``nsimplify(r.subs(point))`` gives it. Replacing the
    symbols (``xreplace``) evaluates a rational function to a Rational directly (most of the
    time ``subs`` and ``nsimplify`` took); ``nsimplify`` is kept for values whose sign sympy
    cannot decide as they stand."""
    if r.has(*_BINDING):
        return sp.nsimplify(r.subs(point))
    v = r.xreplace(point)
    return v if v.is_Rational else sp.nsimplify(v)


def is_zero(
    difference,
    symbols: Sequence[sp.Symbol] | None = None,
    *,
    timeout: float = 30.0,
    witnesses: int = 4,
    seed: int = 0,
) -> IdentityCheck:
    """Decide whether ``difference`` (an expression or a matrix) is identically zero.

    >>> x, y = sp.symbols("x y")
    >>> is_zero((x + y)**2 - x**2 - 2*x*y - y**2).status
    <ZeroStatus.ZERO: 'zero'>
    >>> is_zero((x + y)**2 - x**2 - y**2).status
    <ZeroStatus.NONZERO: 'nonzero'>
    """
    start = time.perf_counter()
    entries = _entries(difference)
    free = sorted(set().union(*(e.free_symbols for e in entries)) if entries else set(), key=str)
    symbols = list(symbols) if symbols is not None else free
    try:
        with time_limit(timeout):
            reduced = [_reduce(e) for e in entries]
    except TimeoutError:
        return IdentityCheck(ZeroStatus.UNDECIDED, None, "timeout in reduction",
                             time.perf_counter() - start)
    if all(r == 0 for r in reduced):
        return IdentityCheck(ZeroStatus.ZERO, 0.0, "expand/together/cancel",
                             time.perf_counter() - start)
    # Look for an exact rational witness; positive values avoid the poles (sqrt, log, 1/x)
    # these identities usually carry.
    rng = random.Random(seed)
    remaining = [r for r in reduced if r != 0]
    try:
        with time_limit(timeout):
            for _ in range(witnesses):
                point = {s: sp.Rational(rng.randint(1, 97), rng.randint(1, 29)) for s in symbols}
                values = [_value_at(r, point) for r in remaining]
                nonzero = [abs(complex(sp.N(v, 30))) for v in values if v.is_zero is False]
                if nonzero:
                    return IdentityCheck(
                        ZeroStatus.NONZERO, max(nonzero), "exact rational witness",
                        time.perf_counter() - start, {str(k): str(v) for k, v in point.items()})
    except (TimeoutError, TypeError, ZeroDivisionError):
        pass
    return IdentityCheck(ZeroStatus.UNDECIDED, None, "not reduced to 0, no witness found",
                         time.perf_counter() - start)
