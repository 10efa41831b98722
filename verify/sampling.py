"""Parameter spaces, drawn from twice: by a seeded numpy generator inside a check's property
route, and as hypothesis strategies in the tests. One definition serves both, so the tests
explore the same space the check samples.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class IntRange:
    lo: int
    hi: int  # inclusive

    def draw(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.lo, self.hi + 1))

    def strategy(self):
        from hypothesis import strategies as st
        return st.integers(self.lo, self.hi)


@dataclass(frozen=True)
class LogUniform:
    lo: float
    hi: float

    def draw(self, rng: np.random.Generator) -> float:
        return float(math.exp(rng.uniform(math.log(self.lo), math.log(self.hi))))

    def strategy(self):
        from hypothesis import strategies as st
        return st.floats(math.log(self.lo), math.log(self.hi)).map(math.exp)


@dataclass(frozen=True)
class Choice:
    options: Sequence[Any]

    def draw(self, rng: np.random.Generator) -> Any:
        return self.options[int(rng.integers(len(self.options)))]

    def strategy(self):
        from hypothesis import strategies as st
        return st.sampled_from(list(self.options))


SEED = IntRange(0, 2**31 - 1)

Space = Mapping[str, "IntRange | LogUniform | Choice"]


def draw(space: Space, rng: np.random.Generator) -> dict[str, Any]:
    """One configuration from ``space``."""
    return {name: dim.draw(rng) for name, dim in space.items()}


def strategy(space: Space):
    """The hypothesis strategy over the same ``space``."""
    from hypothesis import strategies as st
    return st.fixed_dictionaries({name: dim.strategy() for name, dim in space.items()})
