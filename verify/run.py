"""What a check receives: its parameters, the stated forms, seeded randomness, device, dtype."""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import torch

from numerics.random import make_generator
from theory.derivation import Derivation
from verify.evidence import to_json_value


@dataclass(frozen=True)
class AssumptionOutcome:
    name: str
    description: str
    holds: bool
    source: str  # "parameters" (declared predicate) or "data" (evaluated in the check)
    detail: str = ""
    probe: bool = False  # a deliberate test beyond the assumptions, not the claim's setting

    def as_record(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "holds": self.holds,
                "source": self.source, "detail": self.detail, "probe": self.probe}


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
