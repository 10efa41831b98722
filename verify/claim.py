"""A claim: a declarative record (what the paper says, how we read it) plus one check."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.bounds import Bound, Footprint, value_at
from verify.hooks import render_html

if TYPE_CHECKING:
    from verify.evidence import Evidence
    from verify.run import Run

#: quick: seconds per claim (CI); medium: the training claims at sizes where the paper-size
#: verdict already shows, minutes on a laptop (a claim without its own medium level runs its
#: quick one); full: the paper's sizes.
FIDELITIES = ("quick", "medium", "full")
REQUIRED_FIDELITIES = ("quick", "full")
KINDS = ("definition", "equation", "lemma", "proposition", "theorem", "corollary", "remark",
         "experiment")


class SkipClaim(Exception):
    """Raised by a check that cannot run here (e.g. it needs CUDA); the message says why."""


@dataclass(frozen=True)
class Assumption:
    """A machine-checked predicate on the parameters, so a run can say inside/outside.

    Assumptions about the data (rank, realisability) are recorded during the check with
    :meth:`verify.run.Run.assume` instead, because they need the data.
    """

    name: str
    description: str
    holds: Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class NegativeControl:
    """A planted wrong variant of the claim: some of its stated forms replaced.

    The same check runs with ``stated`` overridden; if that variant is not rejected, the
    check cannot tell the paper's formula from a wrong one and the claim is inconclusive.
    """

    description: str
    stated: Mapping[str, Callable[..., Any]]


@dataclass(frozen=True)
class Reading:
    """Another reading of an open convention in the statement, checked beside the printed one.

    The claim's own ``reading`` is the statement as printed (made precise); a ``Reading``
    names one alternative a reader could defend (a constant the paper leaves open, an "="
    that the proof only bounds, a scope the statement omits) and what it changes: parameter
    overrides (merged as ``--set`` values are, dotted keys allowed) and/or replaced stated
    forms. The runner checks each reading with the same check and reports a verdict per
    reading; the claim's verdict stays the printed reading's, so a headline reads "fails as
    printed; holds under reading B". The negative control runs for the printed reading only:
    a reading changes what is compared, not the check's power to tell a wrong form.
    """

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    stated: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    #: True when the parameters change only how results are compared (a scope, a constant,
    #: a relation), never what is simulated or derived: the reading's run then reuses the
    #: printed run's memoised work (``Run.memo``) instead of recomputing it; a memoised route
    #: (``Run.memo_route``) holds comparisons, so it is never shared. Stated forms are never
    #: memoised, so they need no such promise.
    compares_only: bool = False


@dataclass(frozen=True)
class Claim:
    """One claim of one paper.

    ``stated`` holds the paper's formulas as callables (the ``stated`` route); the check reads
    them through ``run.stated[name]`` so the negative control can replace them.
    """

    id: str
    paper: str
    kind: str
    title: str
    source: str
    statement: str
    reading: str
    parameters: Mapping[str, Mapping[str, Any]]
    stated: Mapping[str, Callable[..., Any]]
    check: Callable[[Run], Iterable[Evidence]]
    control: NegativeControl
    assumptions: tuple[Assumption, ...] = ()
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = field(default_factory=tuple)
    #: The parameter space ``verify stress`` searches: :mod:`verify.sampling` dimensions over
    #: the claim's own parameters (a drawn value overrides the fidelity's); a ``seed``
    #: dimension draws the run's seed. Empty: stress draws seeds only.
    space: Mapping[str, Any] = field(default_factory=dict)
    #: Re-checks one configuration beyond float64 (exact sympy, mpmath) before a failure is
    #: called a counterexample: ``recheck(params, stated)`` yields Evidence.
    recheck: Callable[[Mapping[str, Any], Mapping[str, Callable[..., Any]]],
                      Iterable[Evidence]] | None = None
    #: Mutants of the stated forms that may survive (:mod:`verify.mutate`):
    #: ``"form:operator"`` or ``"form:*"`` -> why (an order-only check, a tolerance that
    #: justifiably exceeds the perturbation).
    equivalent_mutants: Mapping[str, str] = field(default_factory=dict)
    #: Alternative readings of open conventions, each verdicted beside the printed one.
    readings: tuple[Reading, ...] = ()
    #: The values a parameter (dotted: a key of a nested one) may take at all, beyond its
    #: type (:mod:`verify.bounds`): ``--set`` and ``run_claim`` refuse the rest before any
    #: work. The stress ``space`` lies inside them.
    bounds: Mapping[str, Bound] = field(default_factory=dict)
    #: What the claim's sizes cost in memory and time (:class:`verify.bounds.Footprint`): an
    #: override whose estimate exceeds the machine or the time limit is refused up front.
    footprint: Footprint = Footprint()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        missing = [f for f in REQUIRED_FIDELITIES if f not in self.parameters]
        if missing:
            raise ValueError(f"{self.id}: parameters lack fidelities {missing}")
        unknown_levels = set(self.parameters) - set(FIDELITIES)
        if unknown_levels:
            raise ValueError(f"{self.id}: unknown fidelities {sorted(unknown_levels)} (one of "
                             f"{', '.join(FIDELITIES)})")
        if "medium" not in self.parameters:
            object.__setattr__(self, "parameters", {**self.parameters,
                                                    "medium": self.parameters["quick"]})
        unknown = set(self.control.stated) - set(self.stated)
        if unknown:
            raise ValueError(f"{self.id}: the negative control replaces unknown stated forms "
                             f"{sorted(unknown)}")
        if not self.control.stated:
            raise ValueError(f"{self.id}: the negative control must replace a stated form")
        # a dotted dimension (``training.K``) varies one key of a nested parameter
        bad = [k for k in self.equivalent_mutants
               if k.partition(":")[0] not in self.stated or not k.partition(":")[2]]
        if bad:
            raise ValueError(f"{self.id}: equivalent_mutants keys {bad} are not "
                             f"'form:operator' with a stated form")
        for r in self.readings:
            if not (r.parameters or r.stated):
                raise ValueError(f"{self.id}: reading {r.name!r} changes nothing")
            odd = ({k for k in r.parameters if k.split(".")[0] not in self.parameters["quick"]}
                   | (set(r.stated) - set(self.stated)))
            if odd:
                raise ValueError(f"{self.id}: reading {r.name!r} changes unknown parameters "
                                 f"or stated forms {sorted(odd)}")
        undeclared = {d for d in self.space if d.split(".")[0] not in self.parameters["quick"]
                      and d != "seed"}
        if undeclared:
            raise ValueError(f"{self.id}: space dimensions {sorted(undeclared)} are not "
                             f"parameters of the claim")
        self._check_bounds()

    def _check_bounds(self) -> None:
        """Bounds and footprint name parameters, and the declared defaults lie inside."""
        odd = sorted(n for n in {*self.bounds, *self.footprint.names()}
                     if n.split(".")[0] not in self.parameters["quick"])
        if odd:
            raise ValueError(f"{self.id}: bounds or footprint name unknown parameters {odd}")
        for fidelity in FIDELITIES:
            for name, bound in self.bounds.items():
                problem = bound.problem(value_at(self.parameters[fidelity], name))
                if problem:
                    raise ValueError(f"{self.id}: its {fidelity} {name} {problem}")

    @property
    def has_own_medium(self) -> bool:
        """Whether the claim declares a medium level (else medium runs its quick one)."""
        return self.parameters["medium"] is not self.parameters["quick"]

    def _repr_html_(self) -> str | None:
        """Jupyter: statement, reading, assumptions and negative control, typeset once
        :mod:`verify.report` is imported (:mod:`verify.hooks`)."""
        return render_html("claim", self.describe())

    def _repr_latex_(self) -> str:
        return f"$$ {self.statement} $$"

    def describe(self) -> dict[str, Any]:
        """The declarative part, for `list --json` and `show`."""
        from verify.evidence import to_json_value

        return {
            "id": self.id, "aliases": list(self.aliases), "paper": self.paper,
            "kind": self.kind, "tags": list(self.tags), "title": self.title,
            "source": self.source, "statement": self.statement, "reading": self.reading,
            "assumptions": [{"name": a.name, "description": a.description}
                            for a in self.assumptions],
            "parameters": to_json_value(self.parameters),
            "negative_control": self.control.description,
            "readings": [{"name": r.name, "description": r.description,
                          "parameters": to_json_value(r.parameters)} for r in self.readings],
        }
