r"""Early decision per run: stop a run as soon as a stated rule decides its outcome.

A rule reads one metric, one value per evaluation, in order. :class:`HeldAbove` says a run
has *reached* its goal when the metric stays at or above a threshold for ``window``
consecutive evaluations; the outcome is dated at the **first** evaluation of that window
(:math:`t^\star = \min\{t : v_t,\dots,v_{t+W-1} \ge \theta\}`, "it had grokked at
:math:`t^\star`"), and is known at the last one (:math:`t^\star + W - 1`), where a training
loop may stop. :class:`HeldBelow` is the same for a metric that should fall (a loss).

A rule never calls a run *not reached* early unless it says so: only an explicit
:class:`GiveUp` (no evaluation up to index ``after`` came within ``level``) decides
'not reached' before the budget ends. Without one, a run that has not decided is 'undecided'
and simply runs its full budget, so its outcome is the full-budget one.

Early outcomes can differ from full-budget ones (a run may reach the threshold, hold it for
``window`` evaluations, then fall back). :func:`disagreement_rate` measures how often, on
full-budget trajectories, with a Wilson interval.

The rule is plain data and a decision records it (:meth:`Decision.as_record`), so a claim
can store the rule beside the result it decided.

>>> rule = HeldAbove("test_acc", 0.95, window=3)
>>> d = decide(rule, [0.2, 0.5, 0.96, 0.97, 0.99, 1.0, 1.0])
>>> d.outcome, d.at, d.known_at
('reached', 2, 4)
>>> d.as_record()["rule"]["text"]
'test_acc >= 0.95 held for 3 consecutive evaluations'
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from verify.design.sequential_seeds import wilson_interval

Outcome = Literal["reached", "not reached", "undecided"]


def _check_int(value: Any, name: str, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")


def _check_finite(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


@dataclass(frozen=True)
class GiveUp:
    """Decide 'not reached' at evaluation index ``after`` (counting from 0) if no evaluation
    up to and including it came within ``level`` (at or above it for :class:`HeldAbove`, at or
    below it for :class:`HeldBelow`). A guess about the rest of the run: measure it with
    :func:`disagreement_rate` before trusting it."""

    after: int
    level: float

    def __post_init__(self) -> None:
        _check_int(self.after, "GiveUp.after", 0)
        _check_finite(self.level, "GiveUp.level")


@dataclass(frozen=True)
class _Held:
    metric: str
    threshold: float
    window: int
    give_up: GiveUp | None = None

    _op = ">="  # overridden by each rule

    def __post_init__(self) -> None:
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"metric must be a non-empty string, got {self.metric!r}")
        _check_finite(self.threshold, "threshold")
        _check_int(self.window, "window", 1)
        if self.give_up is not None:
            if not isinstance(self.give_up, GiveUp):
                raise ValueError(f"give_up must be a GiveUp or None, got {self.give_up!r}")
            # A give-up level past the threshold could call 'not reached' on a run that is
            # already holding the threshold.
            if not self._meets(self.threshold, self.give_up.level):
                raise ValueError(f"give_up.level must be on the near side of threshold "
                                 f"({'<=' if self._op == '>=' else '>='} {self.threshold:g}), "
                                 f"got {self.give_up.level:g}")

    def _meets(self, value: float, bound: float) -> bool:
        # NaN meets nothing: a diverged evaluation breaks a window and never counts as close.
        return value >= bound if self._op == ">=" else value <= bound

    @property
    def text(self) -> str:
        """The rule in words."""
        s = (f"{self.metric} {self._op} {self.threshold:g} held for {self.window} consecutive "
             f"evaluation{'s' if self.window != 1 else ''}")
        if self.give_up is not None:
            s += (f"; not reached if no evaluation up to index {self.give_up.after} had "
                  f"{self.metric} {self._op} {self.give_up.level:g}")
        return s

    def as_record(self) -> dict[str, Any]:
        """The rule as plain JSON data (``kind`` names the class)."""
        return {
            "kind": type(self).__name__,
            "metric": self.metric,
            "threshold": self.threshold,
            "window": self.window,
            "give_up": (None if self.give_up is None
                        else {"after": self.give_up.after, "level": self.give_up.level}),
            "text": self.text,
        }


@dataclass(frozen=True)
class HeldAbove(_Held):
    """``metric >= threshold`` for ``window`` consecutive evaluations decides 'reached' at the
    first of them; an optional :class:`GiveUp` may decide 'not reached' early.

    >>> print(HeldAbove("test_acc", 0.9, 2, GiveUp(after=100, level=0.5)).text)
    ... # doctest: +NORMALIZE_WHITESPACE
    test_acc >= 0.9 held for 2 consecutive evaluations; not reached if no evaluation up to index
    100 had test_acc >= 0.5
    """

    _op = ">="


@dataclass(frozen=True)
class HeldBelow(_Held):
    """``metric <= threshold`` for ``window`` consecutive evaluations decides 'reached' at the
    first of them (for a loss or an error); an optional :class:`GiveUp` as for
    :class:`HeldAbove`, mirrored.

    >>> decide(HeldBelow("loss", 0.01, 2), [1.0, 0.1, 0.005, 0.004]).at
    2
    """

    _op = "<="


Rule = HeldAbove | HeldBelow


@dataclass(frozen=True)
class Decision:
    """A rule's decision on a run.

    ``at`` is the evaluation index the outcome is dated at (the first of the held window for
    'reached', the give-up index for 'not reached'), ``known_at`` the index at which it was
    known (where a loop may stop), both ``None`` when 'undecided'; ``evaluations`` is how
    many values were read; ``step`` is the caller's label of evaluation ``at`` (an epoch) when
    one was given.
    """

    rule: Rule
    outcome: Outcome
    at: int | None
    known_at: int | None
    evaluations: int
    step: Any = None

    @property
    def decided(self) -> bool:
        return self.outcome != "undecided"

    def as_record(self) -> dict[str, Any]:
        """Plain JSON data naming the rule, to be stored with the result it decided."""
        step = self.step
        if step is not None and not isinstance(step, (int, float, str)):
            step = str(step)
        return {"rule": self.rule.as_record(), "outcome": self.outcome, "at": self.at,
                "known_at": self.known_at, "evaluations": self.evaluations, "step": step}


def _check_rule(rule: Any) -> None:
    if not isinstance(rule, (HeldAbove, HeldBelow)):
        raise TypeError(f"rule must be a HeldAbove or HeldBelow, got {rule!r}")


class Watcher:
    """A rule applied to a stream, one value per evaluation: feed it with :meth:`update`,
    stop the loop when :attr:`stop` is true. Values may be numbers or mappings holding the
    rule's metric (an evaluation's log record). Updates after the decision are ignored, so
    the decision stays the first one.

    >>> w = Watcher(HeldAbove("acc", 0.9, window=2))
    >>> for epoch, acc in enumerate([0.1, 0.95, 0.5, 0.92, 0.93, 0.99]):
    ...     if w.update({"acc": acc}, step=epoch * 10).stop:
    ...         break
    >>> w.decision.outcome, w.decision.at, w.decision.step, epoch
    ('reached', 3, 30, 4)
    """

    def __init__(self, rule: Rule) -> None:
        _check_rule(rule)
        self.rule = rule
        self._seen = 0
        self._run_start: int | None = None
        self._run_step: Any = None
        self._close = False
        self._decision = Decision(rule, "undecided", None, None, 0)

    @property
    def decision(self) -> Decision:
        """The decision so far ('undecided' until the rule decides)."""
        return self._decision

    @property
    def stop(self) -> bool:
        """Whether the rule has decided, so the run can stop."""
        return self._decision.decided

    def update(self, value: float | Mapping[str, float], step: Any = None) -> Watcher:
        """Read one evaluation (``step``: the caller's label for it, e.g. the epoch)."""
        if self.stop:
            return self
        if isinstance(value, Mapping):
            if self.rule.metric not in value:
                raise ValueError(f"the evaluation record has no metric {self.rule.metric!r} "
                                 f"(it has {sorted(value)!r})")
            value = value[self.rule.metric]
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"each evaluation must be a number, got {value!r}") from None
        i = self._seen
        self._seen += 1
        rule = self.rule
        if rule._meets(v, rule.threshold):
            if self._run_start is None:
                self._run_start, self._run_step = i, step
            if i - self._run_start + 1 >= rule.window:
                self._decision = Decision(rule, "reached", self._run_start, i, self._seen,
                                          self._run_step)
                return self
        else:
            self._run_start = None
        if rule.give_up is not None:
            self._close = self._close or rule._meets(v, rule.give_up.level)
            if i == rule.give_up.after and not self._close:
                self._decision = Decision(rule, "not reached", i, i, self._seen, step)
                return self
        self._decision = Decision(rule, "undecided", None, None, self._seen)
        return self


def first_decision(rule: Rule, trajectory: Iterable[float | Mapping[str, float]], *,
                   steps: Iterable[Any] | None = None) -> Decision:
    """The rule's decision on a stream, reading no further than needed: a generator that
    trains one epoch per item stops training when the rule decides.

    >>> def training():
    ...     for acc in [0.3, 0.95, 0.96, 0.2]:
    ...         yield acc
    ...     raise AssertionError("never trained this far")
    >>> first_decision(HeldAbove("acc", 0.9, 2), training()).evaluations
    3
    """
    w = Watcher(rule)
    labels = iter(steps) if steps is not None else None
    for value in trajectory:
        step = next(labels, None) if labels is not None else None
        if w.update(value, step).stop:
            break
    return w.decision


def decide(rule: Rule, values: Sequence[float] | Mapping[str, Sequence[float]], *,
           steps: Sequence[Any] | None = None) -> Decision:
    """The rule's decision on a recorded trajectory: a sequence of the metric's values, or a
    mapping of metric names to sequences (the rule reads its own). ``steps`` labels the
    evaluations (epochs); the decision's ``step`` is the label of ``at``.

    >>> r = HeldAbove("acc", 0.9, 2, GiveUp(after=2, level=0.5))
    >>> decide(r, {"acc": [0.1, 0.2, 0.3, 0.95, 0.99]},
    ...        steps=[0, 100, 200, 300, 400]).as_record()["outcome"]
    'not reached'
    >>> decide(HeldAbove("acc", 0.9, 2), [0.95, 0.1]).outcome
    'undecided'
    """
    _check_rule(rule)
    if isinstance(values, Mapping):
        if rule.metric not in values:
            raise ValueError(f"values has no metric {rule.metric!r} (it has {sorted(values)!r})")
        values = values[rule.metric]
    if steps is not None and len(steps) != len(values):
        raise ValueError(f"steps must label every evaluation: {len(steps)} steps for "
                         f"{len(values)} values")
    return first_decision(rule, values, steps=steps)


@dataclass(frozen=True)
class Disagreement:
    """How often the early outcome differed from the full-budget one.

    ``count`` of ``total`` runs disagreed (``rate``, with Wilson's interval at ``level``);
    ``decided`` runs were decided early, the others ran their full budget and agree by
    construction. ``evaluations_used`` / ``evaluations_full`` is what early stopping read
    against the full budgets.
    """

    rule: Rule
    count: int
    total: int
    decided: int
    interval: tuple[float, float]
    level: float
    evaluations_used: int
    evaluations_full: int

    @property
    def rate(self) -> float:
        return self.count / self.total if self.total else math.nan

    @property
    def saved(self) -> float:
        """The share of evaluations early stopping did not need."""
        full = self.evaluations_full
        return 1.0 - self.evaluations_used / full if full else 0.0

    def as_record(self) -> dict[str, Any]:
        rate = self.rate
        return {"rule": self.rule.as_record(), "count": self.count, "total": self.total,
                "decided": self.decided, "rate": None if math.isnan(rate) else rate,
                "interval": list(self.interval), "level": self.level,
                "evaluations_used": self.evaluations_used,
                "evaluations_full": self.evaluations_full, "saved": self.saved}


def _as_reached(outcome: Any) -> bool:
    if isinstance(outcome, (bool, np.bool_)):
        return bool(outcome)
    if isinstance(outcome, str) and outcome in ("reached", "not reached"):
        return outcome == "reached"
    raise ValueError(f"full_outcome must return a bool or 'reached'/'not reached', "
                     f"got {outcome!r}")


def disagreement_rate(rule: Rule,
                      trajectories: Iterable[Sequence[float] | Mapping[str, Sequence[float]]],
                      full_outcome: Callable[[Sequence[float]], bool | str], *,
                      level: float = 0.95) -> Disagreement:
    r"""Measure, on full-budget trajectories, how often the rule's early outcome differs from
    the full-budget outcome ``full_outcome(values)`` (the metric's whole sequence, e.g.
    "the last value is >= 0.95"). A run the rule leaves 'undecided' would run its full budget,
    so it counts as agreeing; the rate is over all runs, with Wilson's interval.

    >>> rule = HeldAbove("acc", 0.9, window=2)
    >>> runs = [[0.1, 0.95, 0.97, 0.99], [0.95, 0.96, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]]
    >>> d = disagreement_rate(rule, runs, lambda v: v[-1] >= 0.9)
    >>> d.count, d.total, d.decided, d.evaluations_used, d.evaluations_full
    (1, 3, 2, 9, 12)
    """
    _check_rule(rule)
    count = total = decided = used = full = 0
    for values in trajectories:
        if isinstance(values, Mapping):
            if rule.metric not in values:
                raise ValueError(f"a trajectory has no metric {rule.metric!r}")
            values = values[rule.metric]
        d = decide(rule, values)
        total += 1
        full += len(values)
        used += d.evaluations
        if d.decided:
            decided += 1
            if (d.outcome == "reached") != _as_reached(full_outcome(values)):
                count += 1
    return Disagreement(rule, count, total, decided, wilson_interval(count, total, level),
                        level, used, full)
