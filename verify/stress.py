r"""Counterexample search: where does a claim stop holding, and what is the smallest case.

:func:`stress` draws configurations from the claim's parameter space (``Claim.space``, as
hypothesis strategies, so shrinking acts on the paper's own parameters), runs the claim's check
at each, and steers the search with ``hypothesis.target`` towards the largest discrepancy in
units of its tolerance. A configuration whose verdict is ``fail`` (or ``error``) is shrunk to a
minimal one, which is then re-checked before it is called a counterexample (Nitpick's
*genuine* vs *potential*):

* ``genuine``: the claim's exact re-check (``Claim.recheck``: sympy or mpmath at that
  configuration) also fails; or, without one, float64 reproduces it at least
  :data:`CLEAR_MARGIN` tolerances away.
* ``potential``: float64 reproduces it, but within :data:`CLEAR_MARGIN` tolerances and no exact
  re-check exists.
* ``numerical``: the float64 rerun or the exact re-check passes: an artefact of precision.

Modes: ``inside`` draws only configurations where the claim's parameter assumptions hold (a
failure there contradicts the claim), ``outside`` only where one fails (mapping where the
statement stops holding), ``both`` everything. Data assumptions (rank, realisability) are only
known after the run; each point records them.

Every configuration is run once (results are cached by configuration), so hypothesis's final
replay and its shrinking do not repeat work; after ``budget * SHRINK_FACTOR`` runs, unseen
configurations are no longer run, which ends shrinking at the smallest failure found so far.
The search explores the whole budget first (the regime map), then shrinks the first failure.
When a failure inside the assumptions was found, only failures inside them count while
shrinking (in every mode): a smaller case outside would hide the one that contradicts the claim.

A search that stops early says why in :attr:`StressReport.stopped`: its ``time_limit`` ran out
(no new configuration starts after it; the one running finishes), the shrinking cap was
reached, or it was interrupted (``KeyboardInterrupt``). It keeps what it found so far; after an
interruption the failure it reports is ``unconfirmed`` (no re-check runs). ``checkpoint``
receives the report after every run, so a caller can write it as it grows.
"""
from __future__ import annotations

import json
import math
import shlex
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verify.claim import Claim
from verify.evidence import Evidence, to_json_value
from verify.results import ClaimResult
from verify.runner import merge_overrides, run_claim
from verify.sampling import SEED, Choice, IntRange, LogUniform
from verify.sweep import stored_sweep
from verify.verdict import Verdict, verdict_from_evidence

MODES = ("inside", "outside", "both")
#: A float64 failure this many tolerances away is not roundoff: each tolerance already
#: includes the roundoff its computation can accumulate.
CLEAR_MARGIN = 10.0
#: Runs allowed for shrinking, in units of the search budget.
SHRINK_FACTOR = 3
FAILING = (Verdict.FAIL, Verdict.ERROR)


@dataclass(frozen=True)
class Point:
    """One configuration that was run."""

    config: dict[str, Any]
    inside: bool
    verdict: Verdict
    worst_ratio: float  # largest discrepancy / tolerance among compared items (0 if none)
    failed: tuple[str, ...]

    def as_record(self) -> dict[str, Any]:
        return {"config": to_json_value(self.config), "inside_assumptions": self.inside,
                "verdict": self.verdict.value,
                "worst_ratio": None if math.isinf(self.worst_ratio) else self.worst_ratio,
                "failed": list(self.failed)}


@dataclass(frozen=True)
class Counterexample:
    config: dict[str, Any]
    inside: bool
    verdict: Verdict
    status: str  # genuine | potential | numerical | unconfirmed (interrupted)
    failed: tuple[str, ...]
    rechecks: tuple[dict[str, Any], ...]
    reproduce: str

    def as_record(self) -> dict[str, Any]:
        return {"config": to_json_value(self.config), "inside_assumptions": self.inside,
                "verdict": self.verdict.value, "status": self.status,
                "failed": list(self.failed), "rechecks": list(self.rechecks),
                "reproduce": self.reproduce}


@dataclass
class StressReport:
    claim_id: str
    mode: str
    budget: int
    seed: int
    dtype: str
    points: list[Point] = field(default_factory=list)
    counterexample: Counterexample | None = None
    note: str = ""
    seconds: float = 0.0
    stopped: str = ""  # why the search ended before its course ("" when it ran it)

    def coverage(self) -> dict[str, dict[str, int]]:
        """How often each value (or bin) of each dimension was exercised."""
        out: dict[str, Counter] = defaultdict(Counter)
        for p in self.points:
            for name, value in p.config.items():
                out[name][bin_label(value)] += 1
        return {name: dict(sorted(c.items())) for name, c in out.items()}

    def regime_map(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per dimension and value bin: how many runs passed, failed, were inconclusive,
        inside and outside the assumptions."""
        out: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        for p in self.points:
            for name, value in p.config.items():
                cell = out[name][bin_label(value)]
                cell[p.verdict.value] += 1
                cell["inside" if p.inside else "outside"] += 1
        return {name: {b: dict(c) for b, c in sorted(bins.items())}
                for name, bins in out.items()}

    def as_record(self) -> dict[str, Any]:
        return {"claim": self.claim_id, "mode": self.mode, "budget": self.budget,
                "seed": self.seed, "dtype": self.dtype, "runs": len(self.points),
                "seconds": round(self.seconds, 3), "note": self.note,
                "stopped": self.stopped or None,
                "counterexample": self.counterexample.as_record() if self.counterexample
                else None,
                "coverage": self.coverage(), "regime_map": self.regime_map(),
                "points": [p.as_record() for p in self.points]}


def bin_label(value: Any) -> str:
    """Integers and strings as themselves; floats by decade (``1e-3..1e-2``)."""
    if isinstance(value, float) and value != 0 and math.isfinite(value):
        e = math.floor(math.log10(abs(value)))
        sign = "-" if value < 0 else ""
        return f"{sign}1e{e}..1e{e + 1}"
    return str(value)


def space_of(claim: Claim) -> dict[str, Any]:
    """The claim's declared space, or seeds only."""
    return dict(claim.space) if claim.space else {"seed": SEED}


def _strategy(space: Mapping[str, Any]):
    from hypothesis import strategies as st
    for name, dim in space.items():
        if not isinstance(dim, (IntRange, LogUniform, Choice)):
            raise TypeError(f"space[{name!r}]: {dim!r} is not an IntRange, LogUniform or Choice")
    return st.fixed_dictionaries({name: dim.strategy() for name, dim in space.items()})


def _params_hold(claim: Claim, config: Mapping[str, Any], fidelity: str) -> bool:
    params = merge_overrides(claim.parameters[fidelity],
                             {k: v for k, v in config.items() if k != "seed"})
    return all(bool(a.holds(params)) for a in claim.assumptions)


def _key(config: Mapping[str, Any]) -> str:
    return json.dumps(to_json_value(dict(config)), sort_keys=True)


def _ratio(evidence: list[Evidence]) -> float:
    ratios = [e.ratio for e in evidence if e.ok is not None]
    return max(ratios, default=0.0)


def _failed(result: ClaimResult) -> tuple[str, ...]:
    if result.verdict is Verdict.ERROR:
        return (result.reason,)
    return tuple(f"{e.quantity} [{e.route.value}]" for e in result.evidence if e.ok is False)


def _literal(value: Any) -> str:
    """A Python literal with double-quoted strings (they read well inside shell quotes)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        inner = ", ".join(map(_literal, value))
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(map(_literal, value)) + "]"
    return repr(value)


def reproduce_line(claim_id: str, config: Mapping[str, Any], dtype: str,
                   modules: Sequence[str] = ()) -> str:
    """The ``check`` command that reruns ``config`` (values as Python literals, quoted for a
    POSIX shell), with a ``--module`` for each module the search was given."""
    parts = [f"python -m verify check {claim_id}"]
    for name, value in config.items():
        if name == "seed":
            parts.append(f"--seed {value}")
        else:
            parts.append("--set " + shlex.quote(f"{name}={_literal(value)}"))
    if dtype != "float64":
        parts.append(f"--dtype {dtype}")
    parts += [f"--module {shlex.quote(m)}" for m in modules]
    return " ".join(parts)


def stress(claim: Claim, *, budget: int = 20, mode: str = "both", seed: int = 0,
           fidelity: str = "quick", dtype: str = "float64", device: str = "cpu",
           progress: Callable[[str], None] | None = None,
           modules: Sequence[str] = (), time_limit: float | None = None,
           checkpoint: Callable[[StressReport], None] | None = None) -> StressReport:
    """Search ``claim``'s space for the configuration that breaks it (see the module doc).

    ``modules``: the ``--module`` arguments that registered the claim, repeated in the
    counterexample's reproduce line. ``time_limit``: wall seconds after which no new
    configuration is run. ``checkpoint``: called with the report after every run."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import Unsatisfiable

    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget: {budget!r} must be a positive integer")
    if time_limit is not None and not 0 < time_limit < math.inf:
        raise ValueError(f"time_limit: {time_limit!r} must be a finite number of seconds > 0 "
                         f"(None: no limit)")
    space = space_of(claim)
    report = StressReport(claim.id, mode, budget, seed, dtype)
    cache: dict[str, tuple[ClaimResult, Point]] = {}
    start = time.perf_counter()
    cap = budget * (1 + SHRINK_FACTOR)

    def evaluate(config: dict[str, Any]) -> tuple[ClaimResult, Point] | None:
        key = _key(config)
        if key in cache:
            return cache[key]
        if len(cache) >= cap:
            report.stopped = report.stopped or (
                f"shrinking reached the cap of {cap} runs (budget {budget} x "
                f"{1 + SHRINK_FACTOR}): the failure shown is the smallest found by then")
            return None
        if time_limit is not None and time.perf_counter() - start >= time_limit:
            report.stopped = report.stopped or (
                f"time limit of {time_limit:g} s reached after {len(cache)} runs: what is "
                f"shown is what was found by then")
            return None
        overrides = {k: v for k, v in config.items() if k != "seed"}
        result = run_claim(claim, fidelity=fidelity, device=device, dtype=dtype,
                           seed=int(config.get("seed", seed)), overrides=overrides,
                           control=False, readings=False, sweeper=stored_sweep)
        point = Point(dict(config), result.inside_assumptions, result.verdict,
                      _ratio(result.evidence), _failed(result))
        cache[key] = (result, point)
        report.points.append(point)
        if progress:
            progress(f"[{len(cache)}] {point.verdict.value:<12} {dict(config)}")
        if checkpoint:
            report.seconds = time.perf_counter() - start
            checkpoint(report)
        return cache[key]

    class Found(Exception):
        pass

    last_failure: dict[str, Any] = {}

    def make_search(shrink: bool, inside_only: bool = False):
        @hypothesis_seed(seed)
        @settings(max_examples=budget, database=None, deadline=None,
                  phases=(Phase.generate, Phase.target) + ((Phase.shrink,) if shrink else ()),
                  print_blob=False, verbosity=Verbosity.quiet,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
        @given(_strategy(space))
        def search(config: dict[str, Any]) -> None:
            from hypothesis import assume
            holds = _params_hold(claim, config, fidelity)
            assume(mode == "both" or holds == (mode == "inside"))
            outcome = evaluate(config)
            if outcome is None:
                return
            _, point = outcome
            if mode == "inside" and not point.inside:
                return  # a data assumption failed: mapped, but no counterexample to the claim
            if point.worst_ratio > 0:
                target(min(math.log10(point.worst_ratio), 300.0),
                       label="log10(discrepancy / tolerance)")
            if shrink and point.verdict in FAILING and (point.inside or not inside_only):
                last_failure["config"] = dict(config)
                raise Found(point.verdict.value)
        return search

    # Explore first (the regime map wants the whole budget, not a stop at the first failure),
    # then search again with failures raised: the same seed replays the exploration from the
    # cache up to its first failure, which hypothesis then shrinks.
    interrupted = False
    try:
        make_search(shrink=False)()
        if any(p.verdict in FAILING and (mode != "inside" or p.inside) for p in report.points):
            make_search(shrink=True, inside_only=any(p.verdict in FAILING and p.inside
                                                     for p in report.points))()
    except Found:
        pass
    except Unsatisfiable:
        report.note = f"no configuration of the space is {mode} the assumptions"
    except KeyboardInterrupt as exc:
        interrupted = True
        why = exc.args[0] if exc.args else "Ctrl-C"
        report.stopped = (f"interrupted ({why}) after {len(report.points)} runs: the failure "
                          f"shown, if any, is the smallest found by then, not re-checked")
    failure = cache[_key(last_failure["config"])] if "config" in last_failure \
        else _first_failure(cache.values(), mode)
    if failure is not None:
        result, point = failure
        report.counterexample = (_unconfirmed(claim, point, modules) if interrupted else
                                 _confirm(claim, result, point, fidelity=fidelity,
                                          dtype=dtype, device=device, seed=seed,
                                          modules=modules))
    report.seconds = time.perf_counter() - start
    return report


def _first_failure(outcomes: Iterable[tuple[ClaimResult, Point]],
                   mode: str) -> tuple[ClaimResult, Point] | None:
    """The first failing run, inside the assumptions if any failed there: the counterexample
    of a search stopped before it shrank one."""
    failing = [(r, p) for r, p in outcomes
               if p.verdict in FAILING and (p.inside or mode != "inside")]
    return next((o for o in failing if o[1].inside), failing[0] if failing else None)


def _unconfirmed(claim: Claim, point: Point, modules: Sequence[str]) -> Counterexample:
    return Counterexample(dict(point.config), point.inside, point.verdict, "unconfirmed",
                          point.failed, (), reproduce_line(claim.id, point.config, "float64",
                                                           modules))


def _confirm(claim: Claim, result: ClaimResult, point: Point, *, fidelity: str, dtype: str,
             device: str, seed: int, modules: Sequence[str] = ()) -> Counterexample:
    """Re-check the minimal failure in float64 and, where the claim has one, exactly."""
    config = point.config
    overrides = {k: v for k, v in config.items() if k != "seed"}
    rechecks: list[dict[str, Any]] = []
    if point.verdict is Verdict.ERROR:
        status = "genuine"  # a check that crashes on a valid configuration is a defect as is
    else:
        f64 = result if dtype == "float64" else run_claim(
            claim, fidelity=fidelity, device=device, dtype="float64",
            seed=int(config.get("seed", seed)), overrides=overrides, control=False,
            readings=False, sweeper=stored_sweep)
        ratio = _ratio(f64.evidence)
        rechecks.append({"how": "float64 rerun", "verdict": f64.verdict.value,
                         "worst_ratio": None if math.isinf(ratio) else ratio})
        if claim.recheck is not None:
            params = {**claim.parameters[fidelity], **overrides}
            exact = list(claim.recheck(params, claim.stated))
            verdict, why = verdict_from_evidence(exact)
            rechecks.append({"how": "exact re-check", "verdict": verdict.value, "reason": why})
            status = "genuine" if verdict is Verdict.FAIL else "numerical"
        elif f64.verdict is not Verdict.FAIL:
            status = "numerical"
        else:
            status = "genuine" if ratio >= CLEAR_MARGIN else "potential"
    return Counterexample(dict(config), point.inside, point.verdict, status, point.failed,
                          tuple(rechecks), reproduce_line(claim.id, config, "float64"
                                                          if status != "numerical" else dtype,
                                                          modules))
