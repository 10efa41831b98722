r"""theory-verify's public API: everything a claim needs, importable from ``verify`` alone.

A claim is a declarative record of what a paper states and how the toolkit reads it, plus a
check: a generator of :class:`Evidence`, each item comparing the paper's **stated** form with
the toolkit's **derived** one (sympy, from definitions) or with a **measured** one (a torch
simulation), under a :class:`Tolerance` that says why it is that size. A
:class:`NegativeControl` plants a wrong stated form that the check must reject.

The pieces, by what a claim author reaches for:

* the record: :class:`Claim`, :class:`NegativeControl`, :class:`Assumption`, :class:`Reading`,
  :class:`SkipClaim`, :func:`register`;
* the run a check receives: :class:`Run` (parameters, stated forms, seeded streams, device,
  dtype, ``run.figure``, ``run.plot``, ``run.assume``, ``run.derivation``); ``run.memo``
  memoises a simulation the stated forms do not enter (shared by the claim's run and its
  negative control's, under a key the run builds), ``run.memo_route`` a whole route;
* evidence: :func:`compare`, :func:`compare_cases`, :func:`symbolic_identity`,
  :func:`at_least`, :func:`at_most`, :func:`undecided`, :class:`Route`, :data:`EXACT`;
* tolerances: :func:`unit_roundoff`, :func:`roundoff`, :func:`conditioned`,
  :func:`monte_carlo` (Bonferroni CLT bands: :func:`bonferroni_z`, :data:`FALSE_ALARM`);
* error trends (asymptotic claims): :func:`fit_trend`, :func:`trend_evidence`,
  :func:`geometric_grid`, :func:`order_along`;
* step-halving ladders (flows): :func:`ladder`, :func:`ladder_tolerance`,
  :func:`ladder_compare`, :func:`order_evidence`, :func:`case_orders`, :func:`roundoff_floors`,
  :func:`level_errors`, :func:`flow_limits`, :func:`limit_evidence`, :func:`resolved_records`;
* parameter spaces for ``stress`` and hypothesis: :class:`IntRange`, :class:`LogUniform`,
  :class:`Choice`, :data:`SEED`, :func:`draw`, :func:`strategy`;
* plots the report draws (``run.plot``): :class:`Plot` (curves, log axes, reference and
  fitted lines; :class:`Reference`), :class:`Heatmap` (a regime map);
* sweeps over grids: ``run.sweep`` (the runner's sweeper: in-process, or under ``check`` the
  store and Dask of :mod:`verify.sweep`); :func:`batched` marks a point function that takes
  a chunk of points;
* derivations (from ``theory``): :class:`Derivation`, :class:`Step`;
* running: :func:`run_claim`, :class:`ClaimResult`, :class:`Verdict`;
* finding a claim: :func:`get_claim` (``get_claim("li2.thm2")``: a built-in claim, or one
  registered, by id or alias; the built-in claims load on its first use, not on
  ``import verify``). In Jupyter, ``import verify.report`` once, and claims and results show
  themselves with the report's look (``docs/notebook.ipynb``);
* declaring a paper: :class:`Paper` (id, title, claims module, sources), named in the
  ``theory_verify.papers`` entry-point group of its distribution, so that an installed paper
  is found without ``--module`` (:mod:`verify.papers`).

Formulas that must evaluate on sympy matrices and torch tensors alike use
:mod:`verify.arrays` (``inv``, ``transpose``, ``eye``, ...), the one public submodule.

A complete claim, registered, run and verdicted:

>>> import sympy as sp
>>> from verify import Claim, NegativeControl, Run, run_claim, symbolic_identity, Verdict
>>> def stated_sum(n):
...     return n * (n + 1) / 2
>>> def check(run: Run):
...     n, k = sp.symbols("n k", positive=True, integer=True)
...     yield symbolic_identity("sum of the first n integers", stated=run.stated["sum"](n),
...                             derived=sp.summation(k, (k, 1, n)))
>>> claim = Claim(id="demo.gauss", paper="demo", kind="equation", title="Gauss's sum",
...               source="folklore", statement=r"\sum_{k=1}^n k = n(n+1)/2",
...               reading="as stated", parameters={"quick": {}, "full": {}},
...               stated={"sum": stated_sum}, check=check,
...               control=NegativeControl("off by one", {"sum": lambda n: n * (n - 1) / 2}))
>>> result = run_claim(claim)
>>> result.verdict is Verdict.PASS and result.control.rejected
True
"""
import os

# Before torch loads OpenMP: its waiting threads spin at full CPU by default, and with the
# toolkit's small tensors they mostly wait. li2.thm6-training at quick with --threads 2 took
# 48 CPU-s against 6.6 with one thread (a 2-core machine at load 4); waiting passively, 8.9.
# A user's own setting stays.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from theory.derivation import Derivation, Step
from verify import arrays
from verify.claim import Assumption, Claim, NegativeControl, Reading, SkipClaim
from verify.error_trends import (
    LEVEL,
    RESOLUTION,
    UNREAD_BEND,
    TrendFit,
    equally_spaced,
    fit_trend,
    geometric_grid,
    geometric_tail,
    order_along,
    pair_estimates,
    trend_evidence,
)
from verify.evidence import (
    EXACT,
    Evidence,
    Route,
    Tolerance,
    at_least,
    at_most,
    compare,
    compare_cases,
    symbolic_identity,
    to_json_value,
    undecided,
)
from verify.papers import Paper
from verify.plots import Heatmap, Plot, Reference
from verify.points import batched
from verify.registry import get as get_claim
from verify.registry import register
from verify.results import ClaimResult
from verify.run import Run
from verify.runner import run_claim
from verify.sampling import SEED, Choice, IntRange, LogUniform, draw, strategy
from verify.step_ladders import (
    RESOLVED,
    Limit,
    case_orders,
    flow_limits,
    ladder,
    ladder_compare,
    ladder_tolerance,
    level_errors,
    limit_evidence,
    order_evidence,
    resolved_records,
    roundoff_floors,
)
from verify.tolerances import (
    FALSE_ALARM,
    bonferroni_z,
    conditioned,
    monte_carlo,
    roundoff,
    unit_roundoff,
)
from verify.verdict import Verdict

__all__ = [
    "EXACT", "FALSE_ALARM", "LEVEL", "RESOLUTION", "RESOLVED", "SEED", "UNREAD_BEND",
    "Assumption", "Choice",
    "Claim", "ClaimResult", "Derivation", "Evidence", "Heatmap", "IntRange", "Limit",
    "LogUniform", "NegativeControl", "Paper", "Plot", "Reading", "Reference", "Route", "Run",
    "SkipClaim", "Step", "Tolerance", "TrendFit", "Verdict",
    "arrays", "at_least", "at_most", "batched", "bonferroni_z", "case_orders", "compare",
    "compare_cases", "conditioned", "draw", "equally_spaced", "fit_trend", "flow_limits",
    "geometric_grid", "geometric_tail", "get_claim", "ladder", "ladder_compare", "ladder_tolerance",
    "level_errors", "limit_evidence", "monte_carlo", "order_along", "order_evidence",
    "pair_estimates", "register", "resolved_records", "roundoff", "roundoff_floors",
    "run_claim", "strategy", "symbolic_identity", "to_json_value", "trend_evidence",
    "undecided", "unit_roundoff",
]
