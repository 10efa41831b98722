"""What a check receives: its parameters, the stated forms, seeded randomness, device, dtype."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeVar

import numpy as np
import torch

from numerics.random import make_generator
from theory.derivation import Derivation
from verify import memo as _memo
from verify.evidence import Evidence, to_json_value
from verify.hooks import Sweeper
from verify.points import in_process_sweep
from verify.plots import Heatmap, Plot

T = TypeVar("T")


@dataclass(frozen=True)
class AssumptionOutcome:
    name: str
    description: str
    holds: bool
    # "parameters" (declared predicate), "data" (evaluated in the check) or "ran" (the
    # simulation did what the check needs: Run.ran)
    source: str
    detail: str = ""
    probe: bool = False  # a deliberate test beyond the assumptions, not the claim's setting

    def as_record(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "holds": self.holds,
                "source": self.source, "detail": self.detail, "probe": self.probe}


@dataclass(frozen=True)
class _RouteRecord:
    """A route's evidence and what it left on the run (replayed by :meth:`Run.memo_route`)."""

    evidence: tuple[Evidence, ...]
    derivations: tuple
    figures: tuple[tuple[str, Any], ...]
    assumptions: tuple


@dataclass
class Run:
    """The context of one execution of a check (the claim itself, or its negative control)."""

    claim_id: str
    fidelity: str
    params: Mapping[str, Any]
    stated: Mapping[str, Callable[..., Any]]
    seed: int
    device: torch.device
    dtype: torch.dtype
    is_control: bool = False
    derivations: list[Derivation] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    data_assumptions: list[AssumptionOutcome] = field(default_factory=list)
    #: The parameters the memo keys on, when they differ from ``params``: a reading that
    #: changes only what is compared (``Reading.compares_only``) keys on the printed
    #: reading's, so it reuses that run's simulations.
    memo_params: Mapping[str, Any] | None = None
    #: Runs :meth:`sweep`'s grids: the runner hands down the one it received
    #: (:mod:`verify.hooks`); the kernel's own computes in this process and stores nothing.
    sweeper: Sweeper = in_process_sweep

    def __post_init__(self) -> None:
        self.params = MappingProxyType(dict(self.params))
        self.stated = MappingProxyType(dict(self.stated))

    def seed_for(self, stream: str) -> int:
        """A seed for one named stream of draws, fixed by (run seed, claim id, stream).

        Streams keep draws independent of the order in which a check makes them.
        """
        digest = hashlib.sha256(f"{self.seed}:{self.claim_id}:{stream}".encode()).digest()
        return int.from_bytes(digest[:8], "little") >> 1

    def generator(self, stream: str) -> torch.Generator:
        return make_generator(self.seed_for(stream))

    def rng(self, stream: str) -> np.random.Generator:
        return np.random.default_rng(self.seed_for(stream))

    def derivation(self, derivation: Derivation) -> Derivation:
        """Attach a theory/ derivation so the report can show its steps."""
        self.derivations.append(derivation)
        return derivation

    def figure(self, name: str, value: Any) -> None:
        """Record a measured figure that informs but does not decide the verdict."""
        self.figures[name] = to_json_value(value)

    def plot(self, plot: Plot | Heatmap) -> None:
        """Record a :class:`~verify.plots.Plot` or :class:`~verify.plots.Heatmap` among the
        figures, under its title, as plain JSON with a ``"kind"`` key; the report draws it.
        Like :meth:`figure`, it informs and never decides the verdict. The plot was validated
        when it was built, so a wrong one fails here, in the check, not in the report."""
        if not isinstance(plot, (Plot, Heatmap)):
            raise TypeError(f"run.plot: a verify.Plot or verify.Heatmap, not "
                            f"{type(plot).__name__} (run.figure records other data)")
        self.figures[plot.title] = plot.as_record()

    def assume(self, name: str, holds: bool, description: str = "", detail: str = "",
               *, probe: bool = False) -> bool:
        """Record an assumption evaluated on the actual data; returns ``holds``.

        ``probe=True`` marks evidence that goes beyond the assumptions on purpose (e.g. K > n
        where the paper assumes K < n): it is reported, but does not put the claim's own
        setting "outside the assumptions".
        """
        self.data_assumptions.append(
            AssumptionOutcome(name, description or name, bool(holds), "data", detail, probe))
        return bool(holds)

    def ran(self, name: str, holds: bool, detail: str = "") -> bool:
        """Record whether a simulation did what the check needs (a net trained beyond
        chance, an ascent reached its gradient tolerance, a flow stayed finite); returns
        ``holds``. When one does not hold, the verdict is ``inconclusive`` with this as its
        reason, whatever the evidence says: a broken run decides nothing. ``detail`` gives
        the measured figure, e.g. ``"test accuracy 0.04, chance 0.04"``.
        """
        self.data_assumptions.append(
            AssumptionOutcome(name, detail or name, bool(holds), "ran", detail))
        return bool(holds)

    def memo_key(self, name: str, key: Hashable = (), *, uses: Sequence[str] = (),
                 scope: Literal["run", "process"] = "run", compares: bool = False) -> tuple:
        """The key under which :meth:`memo` stores ``name`` (see there). ``compares``: the
        stored value holds comparisons (a route's evidence), so it keys on the run's own
        parameters even for a reading that shares the printed run's simulations."""
        stated = tuple(self.stated[n] for n in uses)
        if scope == "process":
            return (name, "process", str(self.dtype), str(self.device), key, stated)
        if scope != "run":
            raise ValueError(f"memo scope {scope!r}: 'run' or 'process'")
        keyed = self.params if self.memo_params is None or compares else self.memo_params
        return (name, self.claim_id, self.fidelity,
                json.dumps(to_json_value(dict(keyed)), sort_keys=True), self.seed,
                str(self.dtype), str(self.device), key, stated)

    def memo(self, name: str, compute: Callable[[], T], *, key: Hashable = (),
             uses: Sequence[str] = (), scope: Literal["run", "process"] = "run") -> T:
        """``compute()``, computed once per (``name``, claim id, fidelity, the run's parameters,
        seed, dtype, device, ``key``) and returned from the process-wide store after, so the
        negative control's run (same claim, parameters, seed, dtype, device: ``is_control`` is
        not in the key) reuses its check's simulations and derivations.

        The parameters (every override included, as canonical JSON) are in the key because one
        process may run a claim at several settings (``check --set``, ``verify stress``,
        tests); ``key`` holds only what a check varies inside one run (a depth, a method, a
        group, a stream).

        **Never memoise anything that reads** ``run.stated``: the control's run would get the
        check's value, computed from the other stated forms. The one exception is a form named
        in ``uses``: its function is then in the key, so a control that swaps it recomputes
        (:meth:`memo_route` does the same for a whole route). Nor anything that records on the
        run (``run.figure``, ``run.derivation``, ``run.assume``) inside ``compute``: a second
        run would not record it; record the returned value instead
        (``run.derivation(run.memo(...))``).

        ``scope="process"`` shares the value with every run in the process, whatever its claim,
        parameters or seed (only ``name``, dtype, device and ``key`` are in the key): for a
        computation that truly depends on none of them but through ``key`` (an exact
        derivation at given sizes, a simulation several claims draw from one claim's streams),
        where recomputing it per claim costs time. ``key`` must then hold everything
        ``compute`` depends on."""
        return _memo.cached(self.memo_key(name, key, uses=uses, scope=scope), compute)

    def sweep(self, name: str, fn: Callable[..., Any], points: Sequence[Mapping[str, Any]],
              *, batch_size: int = 1, owner: str | None = None) -> list[dict[str, Any]]:
        """The results of the run's sweeper over ``points`` (a training grid: configurations x
        seeds), in their order. Under ``check`` that is :func:`verify.sweep.stored_sweep`: in
        this process or on the Dask cluster ``check --backend dask`` names, each finished
        point stored, so a rerun computes only what is missing (:mod:`verify.hooks`). ``fn`` is
        a module-level point function (JSON dict in, JSON dict out; :func:`verify.points.batched`
        for a list of points per call); the points must hold everything it depends on (device
        and dtype included), since the result is memoised for the process under them, so the
        negative control and other claims that ask for the same points reuse it. ``owner``:
        the claim whose grid this is, when several claims draw from one grid (default: this
        run's claim); the store files the points under its id, so a run of any of them in
        another process, a paper-size reference say, reuses the points the others stored.
        Raises ``RuntimeError`` naming the points that failed."""
        pts = [dict(p) for p in points]

        def compute() -> list[dict[str, Any]]:
            return self.sweeper(fn, pts, name=f"{owner or self.claim_id}:{name}",
                                batch_size=batch_size)

        key = json.dumps(to_json_value(pts), sort_keys=True)
        return self.memo(f"sweep {name}", compute, key=(getattr(fn, "__qualname__", ""), key),
                         scope="process")

    def memo_route(self, name: str, uses: Sequence[str], route: Callable[[], Iterator[Evidence]],
                   *, key: Hashable = ()) -> Iterator[Evidence]:
        """The evidence of ``route()``, computed once per (the key of :meth:`memo`, the stated
        functions named in ``uses``) and replayed, with what it left on the run (derivations,
        figures, data assumptions), after: between a claim's run and its negative control's
        run when the control swaps only forms the route does not read.

        ``route`` reads ``run.stated`` only through the names in ``uses``; everything else it
        computes is a pure function of the run's key and ``key``."""
        # apart from memo's keys; a route's evidence compares, so a compares-only reading
        # (which changes exactly what is compared) never replays the printed run's
        full = (*self.memo_key(name, key, uses=uses, compares=True), "route")
        state: dict[str, _RouteRecord] = {}

        def compute() -> _RouteRecord:
            derivations, assumptions = len(self.derivations), len(self.data_assumptions)
            figures = dict(self.figures)
            evidence = tuple(route())
            state["new"] = _RouteRecord(
                evidence, tuple(self.derivations[derivations:]),
                tuple((k, v) for k, v in self.figures.items()
                      if k not in figures or figures[k] is not v),
                tuple(self.data_assumptions[assumptions:]))
            return state["new"]

        record = _memo.cached(full, compute)
        if "new" not in state:
            self.derivations.extend(record.derivations)
            self.figures.update(record.figures)
            self.data_assumptions.extend(record.assumptions)
        return iter(record.evidence)
