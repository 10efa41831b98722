r"""The Fig. 3 training runs (verify/claims/li2/SOURCES.md §5, §7.3), shared by ``li2.fig3``
(the paper's statements) and ``li2.x.fig3-third-party`` (the third party's numbers on the same
runs): the settings per fidelity, the sweep, its per-configuration statistics and the runs'
health.

Both claims ask for the same grid under the same sweep name, owned by ``li2.fig3``: in one
process the second claim gets the first's results from the memo, and in another process (a
paper-size reference, say) from the results store.

The runs: modular addition :math:`\mathbb Z_M`, two-layer network with :math:`\sigma(x)=x^2`,
the code's class-centred MSE, Adam with coupled weight decay :math:`\eta` on :math:`W` and
:math:`V`, full batch (:class:`numerics.li2.trainer.GroupTrainer` through
:func:`numerics.li2.sweep_points.grokking_series_point`), every seed a sweep point with its
etas on the batch axis.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from numerics.li2.grokking_time import grokking_outcome
from numerics.li2.sweep_points import decode, grokking_series_point
from verify import Run
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import record_trained

#: The claim whose sweep the runs are filed under in the results store.
OWNER = "li2.fig3"

#: The training (and summary) parameters per fidelity; the claims add their own keys.
SETTINGS = {
    # M=29, K=512, p=0.6, 2 seeds: the qualitative statements, not the paper's numbers; the
    # decay keeps the paper's eta_paper = n eta / 2 ~ 0.20 (SOURCES §2.4)
    "quick": {"M": 29, "K": 512, "p": 0.6, "lr": 1e-3, "etas": (8e-4, 0.0),
              "seeds": (0, 1), "epochs": 260, "eval_every": 5, "diag_every": 20,
              "gradient_every": 5, "gram_subsample": None, "gf_window": (50, 150)},
    # the Fig. 3 setting for seed 0 alone, the seed whose numbers the third party reports:
    # 8.3 CPU-min; the same seed-0 figures as full to the last bit
    "medium": {"M": 71, "K": 2048, "p": 0.4, "lr": 1e-3, "etas": (2e-4, 0.0),
               "seeds": (0,), "epochs": 400, "eval_every": 1, "diag_every": 5,
               "gradient_every": 1, "gram_subsample": None, "gf_window": (50, 150)},
    "full": {"M": 71, "K": 2048, "p": 0.4, "lr": 1e-3, "etas": (2e-4, 0.0),
             "seeds": tuple(range(15)), "epochs": 400, "eval_every": 1, "diag_every": 5,
             "gradient_every": 1, "gram_subsample": None, "gf_window": (50, 150)},
}
#: What the sweep's points are made of (the rest of a setting only summarises).
TRAINING = ("K", "p", "lr", "epochs", "eval_every", "diag_every", "gradient_every",
            "gram_subsample")


@dataclass(frozen=True)
class Summary:
    """Per configuration (seed-major, then eta): the statistics the evidence compares."""

    eta: tuple[float, ...]
    seed: tuple[int, ...]
    stats: dict[str, torch.Tensor]        # name -> (B,) float64 (inf = never)
    trends: dict[str, torch.Tensor]       # name -> (D, B) along the diagnostic epochs
    diag_epochs: torch.Tensor
    #: name -> (epochs (E,), values (E, B)): accuracy and loss along training, for the plots
    curves: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)

    def by_eta(self, name: str, positive: bool) -> torch.Tensor:
        """Statistic ``name`` of the configurations with decay (``positive``) or without."""
        keep = torch.tensor([(e > 0) == positive for e in self.eta])
        return self.stats[name][keep]


def first_crossing(epochs: torch.Tensor, values: torch.Tensor, threshold: float) -> torch.Tensor:
    """First epoch with ``values >= threshold`` per column (inf if none)."""
    hit = values >= threshold
    idx = hit.double().argmax(0)
    out = epochs[idx].double()
    return torch.where(hit.any(0), out, torch.full_like(out, math.inf))


def summarise(series: Callable[[str], tuple[torch.Tensor, torch.Tensor]],
              eta: Sequence[float], seed: Sequence[int], window: tuple[int, int]) -> Summary:
    r"""Thresholds, peaks and maxima of every configuration's history (``series(name)``:
    ``(epochs, values (D, B))``, as ``History.series``; ``eta``, ``seed`` per column).
    ``window``: the epochs over which :math:`\|G_F\|` is averaged ("around epoch 100")."""
    et, train_acc = series("train_acc")
    ee, test_acc = series("test_acc")
    eg, gf = series("gf_norm")
    ed, ftf = series("ftf_ratio")
    _, fft = series("fft_ratio")
    _, dist = series("fft_dist")
    _, w_rel = series("w_update_rel")
    _, v_rel = series("v_update_rel")
    _, w_cos = series("w_update_cos")
    _, v_cos = series("v_update_cos")
    in_window = (eg >= window[0]) & (eg <= window[1])
    peak = gf.argmax(0)
    stats = {
        "epoch train acc = 1": first_crossing(et, train_acc, 1.0),
        "epoch train acc >= 0.99": first_crossing(et, train_acc, 0.99),
        "epoch test acc >= 0.5": first_crossing(ee, test_acc, 0.5),
        "epoch test acc >= 0.99": first_crossing(ee, test_acc, 0.99),
        "final test acc": test_acc[-1],
        "final train acc": train_acc[-1],
        "outcome": grokking_outcome(test_acc),
        "peak ||G_F||": gf.max(0).values,
        "epoch of peak ||G_F||": eg[peak].double(),
        "window mean ||G_F||": (gf * in_window[:, None]).sum(0) / in_window.sum(),
        "max off/diag of Ft^T Ft": ftf.max(0).values,
        "max off/diag of P FF^T": fft.max(0).values,
        "initial off/diag of Ft^T Ft": ftf[0],
        "initial off/diag of P FF^T": fft[0],
    }
    ratio = (v_rel / w_rel).log()                                    # NaN at epoch 0
    stats["first update-size sign"] = torch.sign(ratio[1])
    stats["later update-size sign"] = torch.sign(ratio[2:].nan_to_num(math.inf).min(0).values)
    later_w = (ratio[2:] < 0)
    stats["epoch W update dominates"] = torch.where(
        later_w.any(0), ed[2:][later_w.double().argmax(0)].double(),
        torch.full_like(ratio[1], math.inf))
    trends = {"log update-size ratio V/W": ratio, "W update cosine distance": 1 - w_cos,
              "V update cosine distance": 1 - v_cos, "off/diag P FF^T": fft,
              "off/diag Ft^T Ft": ftf, "fft_dist (fit_diag_11)": dist}
    curves = {"train accuracy": (et, train_acc), "test accuracy": (ee, test_acc),
              "train loss": series("train_loss"), "test loss": series("test_loss")}
    return Summary(eta=tuple(eta), seed=tuple(seed), stats=stats, trends=trends,
                   diag_epochs=ed, curves=curves)


def train(run: Run) -> Summary:
    """The runs at ``run.params`` (a :data:`SETTINGS` entry, possibly overridden): every seed
    a sweep point (``run.sweep``: in this process or on the Dask cluster ``check --backend``
    names), its etas on the batch axis; the per-seed series joined seed-major, as one grid of
    all seeds would order them. The stated forms do not enter, so a control's run, and the
    other claim on the same setting, reuse it."""
    p = run.params
    table = torch.as_tensor(build_group(f"Z{p['M']}").table).tolist()
    common = {k: p[k] for k in TRAINING}
    points = [{"table": table, "seed": seed, "etas": list(p["etas"]), **common,
               "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch.")}
              for seed in p["seeds"]]
    results = run.sweep("training", grokking_series_point, points, owner=OWNER)

    def series(name: str) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [(decode(r[name]["epochs"]), decode(r[name]["values"])) for r in results]
        return parts[0][0], torch.cat([v for _, v in parts], dim=1)

    seeds = [s for s in p["seeds"] for _ in p["etas"]]
    etas = [e for _ in p["seeds"] for e in p["etas"]]
    return summarise(series, etas, seeds, tuple(p["gf_window"]))


def healthy(run: Run, s: Summary) -> bool:
    """Record that every run trained (``run.ran``) and say whether every run stayed finite
    (recorded when not): a run that fits nothing neither groks nor memorises, and one that
    reached NaN says nothing, so the comparisons are not made."""
    p = run.params
    # Every run of Fig. 3 fits its training set by epoch ~25; one that fits nothing (a step
    # size that throws it about) neither groks nor memorises, which says nothing about decay.
    _, loss = s.curves["train loss"]
    record_trained(run, p["M"], s.stats["final train acc"], loss[-1],
                   where=f"epoch {p['epochs']}, every (seed, eta)",
                   test_accuracy=s.stats["final test acc"])
    finite = torch.stack([torch.isfinite(s.stats[k]) for k in ("final test acc",
                                                               "peak ||G_F||")]).all(0)
    if not finite.all():
        run.ran("every run stayed finite", False,
                f"{int((~finite).sum())} of {finite.numel()} runs reached NaN/Inf")
    return bool(finite.all())
