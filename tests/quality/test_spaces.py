"""Every paper claim has a parameter space over its own parameters (issue 22): ``stress``
varies more than the seed, each dimension names a parameter (dotted: a key of a nested one),
and each dimension's values pass the same validation as ``--set``. The spaces that held the
statement still (issue 30 item 10) vary what it quantifies over, inside its assumptions."""
from typing import Any

import numpy as np
import pytest

from verify.claim import Claim
from verify.registry import builtin_claims, get
from verify.runner import merge_overrides, validate_overrides
from verify.sampling import Choice, draw


def test_every_claim_varies_its_own_parameters():
    thin = [c.id for c in builtin_claims() if not set(c.space) - {"seed"}]
    assert not thin, f"claims whose stress space is the seed alone: {thin}"


def test_every_dimension_is_a_valid_override_at_its_ends():
    for claim in builtin_claims():
        for name, dim in claim.space.items():
            if name == "seed":
                continue
            ends = dim.options if isinstance(dim, Choice) else (dim.lo, dim.hi)
            for value in ends:
                validate_overrides(claim, {name: value})


#: Claims whose spaces once held the statement still (issue 30 item 10) -> the parameters a
#: draw must vary: what the statement quantifies over, inside its assumptions.
QUANTIFIED = {
    "ns.table1": ("pointwise.depths", "limits.deep", "pointwise.box_alpha",
                  "limits.box_fraction"),
    "ns.x.thm4.14-limit": ("limits.sign_depths", "limits.box_fraction", "limits.d"),
    "ns.prior.pesme-flammarion": ("N", "d", "seed"),
    "li2.fig8": ("Ks", "adam_lrs", "muon_lrs", "weight_decay"),
}


def _draws(claim_id: str, count: int = 64) -> tuple[Claim, list[dict[str, Any]]]:
    claim = get(claim_id)
    rng = np.random.default_rng(sum(map(ord, claim_id)))
    return claim, [draw(claim.space, rng) for _ in range(count)]


def _holds(claim: Claim, config: dict[str, Any]) -> dict[str, bool]:
    params = merge_overrides(claim.parameters["quick"],
                             {k: v for k, v in config.items() if k != "seed"})
    return {a.name: bool(a.holds(params)) for a in claim.assumptions}


@pytest.mark.parametrize("claim_id", sorted(QUANTIFIED))
def test_spaces_vary_what_the_statement_quantifies_over(claim_id):
    claim, configs = _draws(claim_id)
    for name in QUANTIFIED[claim_id]:
        values = {repr(c[name]) for c in configs}
        assert len(values) >= 2, f"{claim_id}: {name} takes one value: {values}"
    for config in configs:
        validate_overrides(claim, {k: v for k, v in config.items() if k != "seed"})


@pytest.mark.parametrize("claim_id", ["ns.table1", "ns.x.thm4.14-limit"])
def test_depths_vary_but_lr_stays_where_the_sign_run_does_not_stall(claim_id):
    """L varies through the depth sequences (q is the table's cells); lr is not drawn:
    AdamW from these starts stalls at the saddle x_k = 0 at the other lrs tried, an
    undecided item, so an lr dimension would mostly draw inconclusive runs."""
    claim, configs = _draws(claim_id)
    assert "limits.lr" not in claim.space
    depths = [name for name in QUANTIFIED[claim_id] if name.endswith(("depths", "deep"))]
    for config in configs:
        for name in depths:
            assert all(L >= 1 for L in config[name]) and len(set(config[name])) == len(
                config[name]), f"{claim_id}: {name} = {config[name]}"
    # the a + b/L fit for L -> oo needs three depths to estimate its own residual
    assert all(len(c["pointwise.depths"]) >= 3 for c in configs if "pointwise.depths" in c)


def test_fig8_draws_are_tuned_and_leave_only_k_small_relative_to_m():
    """Every draw chooses its learning rates on selection seeds apart from the evaluation
    seeds, with its decay inside the matched band: the one assumption a draw may leave is
    K <= 2M, by K = 48 alone."""
    claim, configs = _draws("li2.fig8", 200)
    M = claim.parameters["quick"]["M"]
    for config in configs:
        holds = _holds(claim, config)
        outside = {name for name, ok in holds.items() if not ok}
        expected = {"K small relative to M"} if max(config["Ks"]) > 2 * M else set()
        assert outside == expected, f"{config}: outside {outside}"
        assert len(config["adam_lrs"]) >= 2 and len(config["muon_lrs"]) >= 2
        assert not set(config["selection_seeds"]) & set(config["seeds"])
    assert sum(max(c["Ks"]) <= 2 * M for c in configs) > len(configs) // 2
