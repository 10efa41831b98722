"""What a batch of training runs is: :class:`Hyper` (one entry per configuration) and
:class:`TrainConfig` (what the batch shares), with the allowed losses, activations and top
layers."""
from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from numerics.li2.training_diagnostics import check_groups
from numerics.optimizers import OptimizerSpec

LOSSES = ("mse_class", "mse_sample", "cross_entropy")
ACTIVATIONS = ("x2", "relu", "silu")
TOP_LAYERS = ("trained", "ridge")
DEFAULT_DIAGNOSTICS = ("gradient", "gram", "energy", "updates")

_HYPER_DEFAULTS = {"eta": 0.0, "lr": 1e-3, "p": 0.4, "init_scale": 1.0, "top_init": 1.0,
                   "out_scale": 1.0}


@dataclass(frozen=True)
class Hyper:
    """One entry per configuration (the batch axis). Build with :meth:`batch` or :meth:`grid`."""

    seed: tuple[int, ...]
    data_seed: tuple[int, ...]
    eta: tuple[float, ...]
    lr: tuple[float, ...]
    p: tuple[float, ...]
    init_scale: tuple[float, ...]
    top_init: tuple[float, ...]
    out_scale: tuple[float, ...]

    def __post_init__(self) -> None:
        sizes = {f.name: len(getattr(self, f.name)) for f in dataclasses.fields(self)}
        if len(set(sizes.values())) != 1 or not self.seed:
            raise ValueError(f"hyper: every field needs the same positive length, got {sizes}")
        for s in self.seed + self.data_seed:
            if not 0 <= s < 2**63:
                raise ValueError(f"seed: {s} is outside [0, 2**63)")
        for name, ok, rule in (("eta", lambda x: x >= 0, ">= 0"), ("lr", lambda x: x > 0, "> 0"),
                               ("p", lambda x: 0 < x < 1, "in (0, 1)"),
                               ("init_scale", lambda x: x >= 0, ">= 0"),
                               ("top_init", lambda x: x >= 0, ">= 0"),
                               ("out_scale", lambda x: x > 0, "> 0")):
            bad = [x for x in getattr(self, name) if not (math.isfinite(x) and ok(x))]
            if bad:
                raise ValueError(f"{name}: {bad[0]} must be finite and {rule}")

    def __len__(self) -> int:
        return len(self.seed)

    @classmethod
    def batch(cls, seed: int | Sequence[int], data_seed: int | Sequence[int] | None = None,
              **values: float | Sequence[float]) -> Hyper:
        """Fields given as scalars are broadcast to the length of the sequences (which must
        agree); ``data_seed`` defaults to ``seed``; unnamed fields take their defaults
        (eta 0, lr 1e-3, p 0.4, scales 1)."""
        unknown = set(values) - set(_HYPER_DEFAULTS)
        if unknown:
            raise ValueError(f"hyper: unknown fields {sorted(unknown)}; allowed: seed, "
                             f"data_seed, {', '.join(_HYPER_DEFAULTS)}")
        fields = {**_HYPER_DEFAULTS, **values, "seed": seed,
                  "data_seed": seed if data_seed is None else data_seed}
        lengths = {len(v) for v in fields.values() if isinstance(v, Sequence)}
        if len(lengths) > 1:
            raise ValueError(f"hyper: sequences of different lengths {sorted(lengths)}")
        B = lengths.pop() if lengths else 1
        cast = {"seed": int, "data_seed": int}
        return cls(**{k: tuple(cast.get(k, float)(x) for x in
                               (v if isinstance(v, Sequence) else [v] * B))
                      for k, v in fields.items()})

    @classmethod
    def grid(cls, **axes: Sequence[Any]) -> Hyper:
        """The Cartesian product of the given axes (``seed`` is required), first axis slowest."""
        if "seed" not in axes:
            raise ValueError("hyper: grid needs a seed axis")
        names = list(axes)
        rows = list(itertools.product(*(axes[k] for k in names)))
        return cls.batch(**{k: [r[i] for r in rows] for i, k in enumerate(names)})


@dataclass(frozen=True)
class TrainConfig:
    """What is shared by the whole batch."""

    K: int
    activation: str = "x2"
    loss: str = "mse_class"
    optimizer: OptimizerSpec = field(default_factory=OptimizerSpec)
    top_layer: str = "trained"
    ridge_lambda: float = 1e-3
    eval_every: int = 50
    diag_every: int = 50
    diagnostics: tuple[str, ...] = DEFAULT_DIAGNOSTICS
    #: per-group intervals overriding ``diag_every``, e.g. ``(("gradient", 1),)``
    group_every: tuple[tuple[str, int], ...] = ()
    gram_nodes: int | None = None
    gram_samples: int | None = None
    spectrum_top: int = 0

    def __post_init__(self) -> None:
        if self.K < 1:
            raise ValueError(f"K: {self.K} must be >= 1")
        for name, value, allowed in (("activation", self.activation, ACTIVATIONS),
                                     ("loss", self.loss, LOSSES),
                                     ("top_layer", self.top_layer, TOP_LAYERS)):
            if value not in allowed:
                raise ValueError(f"{name}: {value!r} is not one of {', '.join(allowed)}")
        if self.top_layer == "ridge" and (self.loss == "cross_entropy"
                                          or not self.ridge_lambda > 0):
            raise ValueError("top_layer: 'ridge' needs an MSE loss and ridge_lambda > 0")
        if self.eval_every < 1 or self.diag_every < 1:
            raise ValueError("eval_every, diag_every: must be >= 1")
        for name in ("gram_nodes", "gram_samples"):
            v = getattr(self, name)
            if v is not None and v < 2:
                raise ValueError(f"{name}: {v} must be None (all) or >= 2")
        if self.spectrum_top < 0:
            raise ValueError(f"spectrum_top: {self.spectrum_top} must be >= 0")
        check_groups(self.diagnostics)
        for name, every in self.group_every:
            if name not in self.diagnostics or every < 1:
                raise ValueError(f"group_every: ({name!r}, {every}) needs a group listed in "
                                 f"diagnostics and an interval >= 1")

    def every(self, group: str) -> int:
        """The interval of a diagnostics group."""
        return dict(self.group_every).get(group, self.diag_every)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        opt = d["optimizer"]
        spec = OptimizerSpec(**{**opt, "betas": tuple(opt["betas"]),
                                "ns_coefficients": tuple(tuple(c) for c in
                                                         opt["ns_coefficients"])})
        return cls(**{**d, "optimizer": spec, "diagnostics": tuple(d["diagnostics"]),
                      "group_every": tuple((g, int(e)) for g, e in d["group_every"])})

