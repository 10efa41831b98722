r"""Sequential seeds: add seeds in batches until an interval decides a statement.

A statement about a share ("at least half the seeds grok": :math:`p \ge p_0`) or a mean
("the log time ratio is positive": :math:`\mu > m_0`) is decided by an interval that lies
entirely on one side of the boundary. Instead of fixing the number of seeds in advance, seeds
are drawn in batches of ``batch`` and the interval is looked at after each batch; the run
stops at the first look whose interval excludes the boundary, or at ``cap`` seeds.

**Why a correction is needed.** Each look is a fresh chance for the interval to miss the true
value by bad luck; looking :math:`L` times at level :math:`1-\alpha` and stopping at the first
exclusion decides falsely more often than :math:`\alpha`. The plan knows its largest number of
looks, :math:`L = \lceil \mathrm{cap}/\mathrm{batch} \rceil`, so every look uses level
:math:`1-\alpha/L` (Bonferroni over the planned looks). By the union bound

.. math:: P(\text{some look's interval misses } p) \le \sum_{\ell=1}^{L} \alpha/L = \alpha,

whatever the dependence between looks. A false decision needs a miss (a decision says the
interval lies strictly on one side of :math:`p_0`, so the true value is outside it whenever the
decision is wrong), so the false-decision rate over all looks is at most :math:`\alpha`. The
bound is exact for exact intervals (the t interval on normal data); Wilson's interval has
approximately nominal coverage, and the tests measure the realised rate by simulation.

Wilson's interval at level :math:`1-\gamma` for :math:`x` successes in :math:`n` trials, with
:math:`z = \Phi^{-1}(1-\gamma/2)` and :math:`\hat p = x/n`:

.. math:: \frac{\hat p + z^2/(2n) \pm z\sqrt{\hat p(1-\hat p)/n + z^2/(4n^2)}}{1 + z^2/n}.

The t interval for a mean of :math:`n\ge 2` values with sample standard deviation :math:`s`:
:math:`\bar x \pm t_{n-1,1-\gamma/2}\, s/\sqrt n`.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> plan = SequentialPlan(batch=8, cap=64)
>>> plan.looks, round(plan.level_per_look, 5)
(8, 0.99375)
>>> result = sequential_proportion(plan, lambda look, size: rng.random(size) < 0.9, 0.5, ">=")
>>> result.decision, result.trials <= 24
('holds', True)
>>> print(result.reason)  # doctest: +ELLIPSIS
Bonferroni over 8 planned looks: each look's Wilson interval at level 1 - 0.05/8 = 0.99375, ...
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from scipy import stats

from verify.evidence import json_float

Side = Literal[">=", ">", "<=", "<"]
SeqDecision = Literal["holds", "fails", "undecided"]
SIDES: tuple[str, ...] = (">=", ">", "<=", "<")


def _check_level(level: float, name: str = "level") -> None:
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {level!r}")


@lru_cache(maxsize=1024)
def _z(level: float) -> float:
    # ppf is the slow part of an interval; a sequential run asks for the same level each look.
    return float(stats.norm.ppf(0.5 + level / 2.0))


@lru_cache(maxsize=4096)
def _t(df: int, level: float) -> float:
    return float(stats.t.ppf(0.5 + level / 2.0, df))


def _check_counts(successes: int, trials: int, level: float) -> None:
    _check_level(level)
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 0:
        raise ValueError(f"trials must be a non-negative integer, got {trials!r}")
    if (isinstance(successes, bool) or not isinstance(successes, (int, np.integer))
            or not 0 <= successes <= trials):
        raise ValueError(f"successes must be an integer in [0, trials={trials}], "
                         f"got {successes!r}")


def wilson_interval(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    r"""Wilson's two-sided score interval for a binomial proportion, at ``level``.

    With :math:`z=\Phi^{-1}(1/2+\mathrm{level}/2)`, :math:`\hat p = x/n`, the interval is
    :math:`\big(\hat p + \tfrac{z^2}{2n} \pm z\sqrt{\tfrac{\hat p(1-\hat p)}{n}+\tfrac{z^2}{4n^2}}
    \big)/(1+z^2/n)`. It stays inside :math:`[0, 1]` and is not degenerate at
    :math:`x\in\{0,n\}` (unlike the Wald interval), which matters for small seed counts.
    No trials give :math:`(0, 1)`.

    >>> lo, hi = wilson_interval(8, 8, 0.95)
    >>> round(lo, 4), hi
    (0.6756, 1.0)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    _check_counts(successes, trials, level)
    if trials == 0:
        return 0.0, 1.0
    z = _z(float(level))
    n = float(trials)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    # The exact ends at x = 0 or n are 0 and 1; rounding may put them a hair outside.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi


def clopper_pearson_interval(successes: int, trials: int,
                             level: float = 0.95) -> tuple[float, float]:
    r"""The Clopper–Pearson ("exact") interval for a binomial proportion, at ``level``:
    :math:`\big(B^{-1}_{x,\,n-x+1}(\gamma/2),\; B^{-1}_{x+1,\,n-x}(1-\gamma/2)\big)` with
    :math:`\gamma = 1-\mathrm{level}` and :math:`B^{-1}_{a,b}` the Beta quantile (the ends are
    0 at :math:`x=0` and 1 at :math:`x=n`).

    Its coverage is at least ``level`` for every :math:`p` (Wilson's is only close to it, and
    dips below near :math:`p=0` or 1 with few trials), so with it the Bonferroni bound of a
    sequential plan is a guarantee rather than an approximation. It is wider than Wilson's.

    >>> lo, hi = clopper_pearson_interval(8, 8, 0.95)
    >>> round(lo, 4), hi
    (0.6306, 1.0)
    """
    _check_counts(successes, trials, level)
    return _clopper_pearson(int(successes), int(trials), float(level))


@lru_cache(maxsize=65536)
def _clopper_pearson(successes: int, trials: int, level: float) -> tuple[float, float]:
    # Beta quantiles are slow and a sequential run revisits the same small counts.
    if trials == 0:
        return 0.0, 1.0
    gamma = 1.0 - level
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(gamma / 2, successes,
                                                         trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - gamma / 2, successes + 1,
                                                              trials - successes))
    return lo, hi


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    r"""Student's t interval for the mean of ``values``, at ``level``:
    :math:`\bar x \pm t_{n-1,\,1/2+\mathrm{level}/2}\; s/\sqrt n`.

    Exact for independent normal values; for others it rests on the CLT. Fewer than two
    values give :math:`(-\infty, \infty)`: one value says nothing about the spread. Identical
    values give a zero-width interval, the t interval's own answer; with outcomes that take
    few values, prefer :func:`wilson_interval` or larger batches.

    >>> lo, hi = t_interval([1.0, 2.0, 3.0], 0.95)
    >>> round(lo, 3), round(hi, 3)
    (-0.484, 4.484)
    >>> t_interval([5.0])
    (-inf, inf)
    """
    _check_level(level)
    x = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite numbers (a NaN or inf seed cannot be averaged)")
    if x.size < 2:
        return -math.inf, math.inf
    mean = float(x.mean())
    half = _t(int(x.size - 1), float(level)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean - half, mean + half


@dataclass(frozen=True)
class SequentialPlan:
    """How seeds are added: ``batch`` per look, at most ``cap`` in all, false-decision rate
    ``alpha`` over all looks (Bonferroni: each look at level ``1 - alpha/looks``).

    The last batch is smaller when ``batch`` does not divide ``cap``.

    >>> plan = SequentialPlan(batch=10, cap=25, alpha=0.1)
    >>> plan.looks, plan.sizes, round(plan.level_per_look, 4)
    (3, (10, 10, 5), 0.9667)
    """

    batch: int
    cap: int
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch must be a positive integer (seeds per look), "
                             f"got {self.batch!r}")
        if isinstance(self.cap, bool) or not isinstance(self.cap, int) or self.cap < self.batch:
            raise ValueError(f"cap must be an integer >= batch={self.batch} (the most seeds "
                             f"drawn), got {self.cap!r}")
        _check_level(self.alpha, "alpha")

    @property
    def looks(self) -> int:
        """The most looks the plan can take:
        :math:`\\lceil \\mathrm{cap}/\\mathrm{batch}\\rceil`."""
        return -(-self.cap // self.batch)

    @property
    def sizes(self) -> tuple[int, ...]:
        """The batch size at each look."""
        return tuple(min(self.batch, self.cap - i * self.batch) for i in range(self.looks))

    @property
    def level_per_look(self) -> float:
        """Each look's interval level, :math:`1 - \\alpha/L`."""
        return 1.0 - self.alpha / self.looks

    def reason(self, interval: str = "Wilson") -> str:
        """The correction in words, fit for a tolerance's reason."""
        return (f"Bonferroni over {self.looks} planned looks: each look's {interval} interval at "
                f"level 1 - {self.alpha:g}/{self.looks} = {self.level_per_look:.6g}, so that the "
                f"chance of any look's interval missing the true value, and so of any false "
                f"decision, is at most alpha = {self.alpha:g} (batches of {self.batch}, "
                f"cap {self.cap} seeds)")

    def as_record(self) -> dict[str, Any]:
        return {"batch": self.batch, "cap": self.cap, "alpha": self.alpha, "looks": self.looks,
                "level_per_look": self.level_per_look}


@dataclass(frozen=True)
class Look:
    """The state after one look: seeds so far, the estimate and the interval."""

    look: int
    trials: int
    estimate: float
    interval: tuple[float, float]
    successes: int | None = None


@dataclass(frozen=True)
class SequentialResult:
    """The outcome of a sequential run.

    ``decision`` is 'holds' when the last interval lies strictly on the statement's side of
    the boundary, 'fails' when strictly on the other side, 'undecided' when the cap was
    reached first (``interval`` then says how far from deciding it was). ``successes`` is
    ``None`` for means. ``false_decision_bound`` (proportions) is the plan's exact
    probability of any decision when the true share is the boundary, which bounds its
    false-decision rate at every share (:func:`operating_characteristics`).
    """

    decision: SeqDecision
    statement: str
    estimate: float
    interval: tuple[float, float]
    trials: int
    looks: int
    plan: SequentialPlan
    reason: str
    successes: int | None = None
    history: tuple[Look, ...] = field(default=(), repr=False)
    interval_method: str = "t"
    false_decision_bound: float | None = None

    @property
    def seeds(self) -> int:
        """Seeds used (the same as ``trials``)."""
        return self.trials

    @property
    def decided(self) -> bool:
        return self.decision != "undecided"

    def as_record(self) -> dict[str, Any]:
        """Plain JSON data: the decision, the numbers behind it and the plan."""
        return {
            "decision": self.decision,
            "statement": self.statement,
            "estimate": json_float(self.estimate),
            "interval": [json_float(v) for v in self.interval],
            "successes": self.successes,
            "trials": self.trials,
            "looks": self.looks,
            "plan": self.plan.as_record(),
            "reason": self.reason,
            "interval_method": self.interval_method,
            "false_decision_bound": self.false_decision_bound,
        }


def _check_side(side: str) -> None:
    if side not in SIDES:
        raise ValueError(f"side must be one of {', '.join(map(repr, SIDES))} (the statement "
                         f"'value <side> boundary'), got {side!r}")


def _decide(interval: tuple[float, float], boundary: float, side: str) -> SeqDecision:
    lo, hi = interval
    # Strict on both sides: an interval touching the boundary has not excluded it.
    above, below = lo > boundary, hi < boundary
    if side in (">=", ">"):
        return "holds" if above else "fails" if below else "undecided"
    return "holds" if below else "fails" if above else "undecided"


def _draw(draw_batch: Callable[[int, int], Sequence[Any]], look: int, size: int) -> np.ndarray:
    got = np.asarray(draw_batch(look, size))
    if got.shape != (size,):
        raise ValueError(f"draw_batch(look={look}, size={size}) must return {size} values, "
                         f"got shape {got.shape}")
    return got


_PROPORTION_INTERVALS: dict[str, tuple[Callable[[int, int, float], tuple[float, float]], str]] = {
    "wilson": (wilson_interval, "Wilson"),
    "clopper-pearson": (clopper_pearson_interval, "Clopper-Pearson"),
}


def sequential_proportion(plan: SequentialPlan, draw_batch: Callable[[int, int], Sequence[bool]],
                          p0: float, side: Side, *,
                          interval: Literal["auto", "wilson", "clopper-pearson"] = "auto",
                          ) -> SequentialResult:
    r"""Decide ":math:`p` ``side`` ``p0``" from Bernoulli outcomes drawn in batches.

    ``draw_batch(look, size)`` runs ``size`` new seeds (``look`` counts from 0, so seeds can be
    numbered ``look * plan.batch + i``) and returns one outcome per seed (bool or 0/1). After
    each batch the interval at ``plan.level_per_look`` of all outcomes so far is compared
    with ``p0``; the run stops at the first look it excludes ``p0``.

    ``interval`` is 'wilson' (:func:`wilson_interval`: tighter, so it decides sooner, but its
    coverage is approximate and dips well below nominal near 0 and 1), 'clopper-pearson'
    (:func:`clopper_pearson_interval`: exact coverage, so the Bonferroni bound holds) or
    'auto' (the default): Wilson when this plan's exact false-decision rate with it at ``p0``
    is at most ``alpha`` (:func:`operating_characteristics`), else Clopper-Pearson. The
    reason names the interval used and that exact rate.

    >>> plan = SequentialPlan(batch=4, cap=12)
    >>> r = sequential_proportion(plan, lambda look, size: [True, False] * (size // 2), 0.5, ">=")
    >>> r.decision, r.successes, r.trials, r.looks
    ('undecided', 6, 12, 3)
    """
    _check_side(side)
    if not (isinstance(p0, (int, float)) and 0.0 <= p0 <= 1.0):
        raise ValueError(f"p0 must be a probability in [0, 1], got {p0!r}")
    if interval not in (*_PROPORTION_INTERVALS, "auto"):
        raise ValueError(f"interval must be 'auto' or one of "
                         f"{', '.join(map(repr, _PROPORTION_INTERVALS))}, got {interval!r}")
    chosen = "wilson" if interval == "auto" else interval
    bound = _boundary_rate(plan, float(p0), side, chosen)
    switched = interval == "auto" and bound > plan.alpha
    if switched:
        chosen = "clopper-pearson"
        bound = _boundary_rate(plan, float(p0), side, chosen)
    method, name = _PROPORTION_INTERVALS[chosen]
    reason = (f"{plan.reason(name)}; computed exactly, this plan decides with probability "
              f"{bound:.3g} at p = {p0:g}, which bounds its false-decision rate at every p")
    if switched:
        reason += (" (Wilson's interval, whose coverage dips near 0 and 1, would exceed alpha "
                   "here, so the exact Clopper-Pearson interval is used)")
    successes = trials = 0
    history: list[Look] = []
    decision: SeqDecision = "undecided"
    for look, size in enumerate(plan.sizes):
        got = _draw(draw_batch, look, size)
        if not np.all((got == 0) | (got == 1)):
            raise ValueError(f"draw_batch(look={look}, size={size}) must return booleans "
                             f"(or 0/1), got {got.tolist()!r}")
        successes += int(np.count_nonzero(got))
        trials += size
        bounds = method(successes, trials, plan.level_per_look)
        history.append(Look(look + 1, trials, successes / trials, bounds, successes))
        decision = _decide(bounds, float(p0), side)
        if decision != "undecided":
            break
    last = history[-1]
    return SequentialResult(decision, f"p {side} {p0:g}", last.estimate, last.interval, trials,
                            len(history), plan, reason, successes, tuple(history), chosen, bound)


def sequential_mean(plan: SequentialPlan, draw_batch: Callable[[int, int], Sequence[float]],
                    m0: float, side: Side) -> SequentialResult:
    r"""Decide ":math:`\mu` ``side`` ``m0``" from real values drawn in batches, with the t
    interval at ``plan.level_per_look`` (see :func:`t_interval`; a first batch of one seed
    cannot decide).

    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> plan = SequentialPlan(batch=5, cap=40)
    >>> r = sequential_mean(plan, lambda look, size: rng.normal(2.0, 1.0, size), 0.0, ">")
    >>> r.decision, r.looks
    ('holds', 1)
    """
    _check_side(side)
    if not (isinstance(m0, (int, float)) and math.isfinite(m0)):
        raise ValueError(f"m0 must be a finite number, got {m0!r}")
    values: list[float] = []
    history: list[Look] = []
    decision: SeqDecision = "undecided"
    for look, size in enumerate(plan.sizes):
        got = _draw(draw_batch, look, size).astype(float)
        values.extend(got.tolist())
        interval = t_interval(values, plan.level_per_look)
        history.append(Look(look + 1, len(values), float(np.mean(values)), interval))
        decision = _decide(interval, float(m0), side)
        if decision != "undecided":
            break
    last = history[-1]
    return SequentialResult(decision, f"mean {side} {m0:g}", last.estimate, last.interval,
                            last.trials, len(history), plan, plan.reason("t"), None,
                            tuple(history), "t")


@dataclass(frozen=True)
class OperatingCharacteristics:
    """Exact probabilities of each decision of :func:`sequential_proportion` when the true
    share is ``p``, and the expected number of seeds it uses."""

    p: float
    holds: float
    fails: float
    undecided: float
    expected_seeds: float

    def wrong(self, p0: float, side: Side) -> float:
        """The probability of a false decision about ":math:`p` ``side`` ``p0``" at this
        ``p`` (at :math:`p = p_0` any decision, since a decision excludes :math:`p_0`)."""
        if self.p == p0:
            return self.holds + self.fails
        truth = self.p > p0 if side in (">=", ">") else self.p < p0
        return self.fails if truth else self.holds


def operating_characteristics(plan: SequentialPlan, p: float, p0: float, side: Side, *,
                              interval: Literal["wilson", "clopper-pearson"] = "wilson",
                              ) -> OperatingCharacteristics:
    r"""The exact decision probabilities of :func:`sequential_proportion` at a true share
    ``p``, no simulation: the distribution of the success count among runs still going is
    carried from look to look (convolved with each batch's binomial law), and the mass whose
    interval decides is removed at each look. The false-decision rate of a plan can so be
    computed for every ``p``, including the ``p`` where an approximate interval does worst.

    Why the rate at :math:`p = p_0` bounds every other: couple two runs with shares
    :math:`p < p'` seed by seed, so the second's count is never below the first's. Both
    intervals' ends grow with the count, so if the :math:`p'` run 'fails' at some look, the
    :math:`p` run has failed by then too (it cannot have held earlier: the :math:`p'` run
    would have held as well). So :math:`P_p(\text{fails})` falls and
    :math:`P_p(\text{holds})` rises with :math:`p`, and a false decision (a 'fails' when
    :math:`p > p_0`, a 'holds' when :math:`p < p_0`, for ``side`` '>=') is at most as likely
    as at :math:`p_0`, where :math:`P(\text{holds}) + P(\text{fails})` bounds both.

    >>> oc = operating_characteristics(SequentialPlan(8, 64), 0.5, 0.5, ">=")
    >>> round(oc.wrong(0.5, ">="), 4), round(oc.expected_seeds, 1)
    (0.0287, 63.0)
    """
    _check_side(side)
    if isinstance(p, bool) or not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    if not (isinstance(p0, (int, float)) and 0.0 <= p0 <= 1.0):
        raise ValueError(f"p0 must be a probability in [0, 1], got {p0!r}")
    if interval not in _PROPORTION_INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(map(repr, _PROPORTION_INTERVALS))}"
                         f", got {interval!r}")
    method = _PROPORTION_INTERVALS[interval][0]
    going = np.ones(1)  # P(count = k and no decision yet), k = 0..trials
    trials = 0
    holds = fails = seeds = 0.0
    for size in plan.sizes:
        seeds += size * float(going.sum())
        going = np.convolve(going, stats.binom.pmf(np.arange(size + 1), size, p))
        trials += size
        for k in range(trials + 1):
            decision = _decide(method(k, trials, plan.level_per_look), float(p0), side)
            if decision == "holds":
                holds += going[k]
                going[k] = 0.0
            elif decision == "fails":
                fails += going[k]
                going[k] = 0.0
    return OperatingCharacteristics(float(p), float(holds), float(fails), float(going.sum()),
                                    seeds)


@lru_cache(maxsize=256)
def _boundary_rate(plan: SequentialPlan, p0: float, side: str, interval: str) -> float:
    # Every sequential_proportion call asks for it; repeated calls (a bisection, a
    # simulation) share a plan and a boundary.
    oc = operating_characteristics(plan, p0, p0, side, interval=interval)
    return oc.holds + oc.fails
