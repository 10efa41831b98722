r"""Sequential and adaptive experiment design: spend runs only where a decision needs them.

Three designs, each a set of pure functions over run outcomes (no training code, no paper):

* **early decision per run** (:mod:`~verify.design.early_stop`): a stated rule,
  :class:`HeldAbove` / :class:`HeldBelow` (with an optional :class:`GiveUp`), decides a run's
  outcome as soon as it can (:func:`decide`, :func:`first_decision`, :class:`Watcher` for a
  training loop); :func:`disagreement_rate` measures on full-budget trajectories how often
  the early outcome differs from the full-budget one;
* **sequential seeds** (:mod:`~verify.design.sequential_seeds`): seeds are added in batches
  (:class:`SequentialPlan`) until an interval decides a statement about a share
  (:func:`sequential_proportion`, Wilson or Clopper-Pearson) or a mean
  (:func:`sequential_mean`, t), or a cap is reached; Bonferroni over the planned looks keeps
  the false-decision rate at most ``alpha`` and :attr:`SequentialResult.reason` says so, with
  the exact rate for proportions (:func:`operating_characteristics`);
* **adaptive grids** (:mod:`~verify.design.bracketing`): :func:`bisect_threshold` locates
  where an outcome switches to a stated resolution; :func:`full_grid_threshold` reads the
  same off a full grid for comparison, :func:`evaluations_saved` counts the difference.

The designs compose: a threshold located by bisection whose outcome at each point is a
sequential decision over seeds, each seed's run stopped early by a rule. With a simulated run
(a seed generalises with probability rising through 0.5 at ``p = 0.3``):

>>> import numpy as np
>>> from verify import design
>>> rule = design.HeldAbove("test_acc", 0.95, window=3)
>>> def train(p, seed):  # one run: test accuracy per evaluation, read until the rule decides
...     rng = np.random.default_rng(seed)
...     groks = rng.random() < 1 / (1 + np.exp(-(p - 0.3) / 0.02))
...     for epoch in range(100):
...         yield 1.0 if groks and epoch >= 40 else 0.3
>>> plan = design.SequentialPlan(batch=8, cap=48, alpha=0.05)
>>> def share_grokking(p):  # does at least half of the seeds grok at data fraction p?
...     def draw(look, size):
...         seeds = range(look * plan.batch, look * plan.batch + size)
...         return [design.first_decision(rule, train(p, 1000 * round(p * 1e6) + s)).outcome
...                 == "reached" for s in seeds]
...     return design.sequential_proportion(plan, draw, 0.5, ">=")
>>> bracket = design.bisect_threshold(share_grokking, 0.1, 0.6, resolution=0.05)
>>> print(bracket.text)  # doctest: +NORMALIZE_WHITESPACE
threshold in [0.225, 0.35] (width 0.125, resolution 0.05; 5 evaluations): undecided,
undecided at 0.2875

The share at ``p = 0.2875`` is close to 1/2, so 48 seeds could not decide it: the search
stops there and says so, rather than guessing a side. Far from the threshold 8 seeds decide:
>>> [share_grokking(x).seeds for x, _ in bracket.points]
[8, 8, 8, 8, 48]
>>> print(share_grokking(0.5).reason)  # doctest: +ELLIPSIS
Bonferroni over 6 planned looks: each look's Wilson interval at level 1 - 0.05/6 = ...

Only the names below are public; the submodules hold them.
"""
from verify.design.bracketing import (
    Bracket,
    bisect_threshold,
    evaluations_saved,
    full_grid_threshold,
    grid,
    outcome_value,
)
from verify.design.early_stop import (
    Decision,
    Disagreement,
    GiveUp,
    HeldAbove,
    HeldBelow,
    Watcher,
    decide,
    disagreement_rate,
    first_decision,
)
from verify.design.sequential_seeds import (
    Look,
    OperatingCharacteristics,
    SequentialPlan,
    SequentialResult,
    clopper_pearson_interval,
    operating_characteristics,
    sequential_mean,
    sequential_proportion,
    t_interval,
    wilson_interval,
)

__all__ = [
    "Bracket", "Decision", "Disagreement", "GiveUp", "HeldAbove", "HeldBelow", "Look",
    "OperatingCharacteristics", "SequentialPlan", "SequentialResult", "Watcher", "bisect_threshold",
    "clopper_pearson_interval", "decide", "disagreement_rate", "evaluations_saved",
    "first_decision", "full_grid_threshold", "grid", "operating_characteristics",
    "outcome_value", "sequential_mean",
    "sequential_proportion", "t_interval", "wilson_interval",
]
