"""li2.x.activations: Thms. 2 and 3 beyond x^2, the verdict and what decides it, the map's
cells, and the pieces it builds on (the quadratic activation, the extension's energy scaling,
ReLU's one-sided derivatives).

Findings pinned down: with ax + bx^2 the energy is exactly b^2 times x^2's (the linear part
cancels), so the maxima are x^2's and their energies are b^2 x 4 x the stated ones (li2.thm2's
factor 4); Thm. 3 does not carry over to ax + bx^2 with a != 0 (smallest case Z4: residual
0.74 with the real nodes, 0.89 with the complex ones); under ReLU and SiLU only the maxima on
one-dimensional real irreps stay local maxima (ReLU's as sharp maxima at a kink), and no
(activation, group) of the quick grid reconstructs the targets beyond x^2 and ax + bx^2.
Thms. 4 and 7 (probes on Z5 and D4): x^2 itself reproduces Thm. 7 (every ascent of the
modulated energy ends on a missing irrep) while SiLU's all end on the learned one and ReLU's
split; at these small M the subsampling probe of Thm. 4 decides little (x^2 keeps no maximum
on D4's subsamples), SiLU loses the maxima on Z5 where x^2 keeps some.
"""
import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.activation_probe import (
    activation_features,
    quadratic,
    quadratic_rounding_scale,
    relu_directional_derivatives,
)
from numerics.li2.group_task import first_layer, group_energy, group_task
from tests.planted import failed_quantities
from verify.claims.li2._groups import build_group
from verify.claims.li2.activations_beyond_x2 import linear_in_b_scale, stated_energy_scale
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict

SEEDS = st.integers(0, 2**31 - 1)


@pytest.fixture(scope="module")
def result():
    return run_claim(get("li2.x.activations"))


def test_only_the_stated_energies_fail(result):
    assert result.verdict is Verdict.FAIL
    failed = failed_quantities(result.evidence)
    assert failed and all("E*/M at the distinct maxima" in q for q in failed)
    for e in result.evidence:
        if e.quantity in failed:
            ratios = [m / s for m, s in zip(e.measured, e.stated)]
            assert ratios == pytest.approx([4.0] * len(ratios), rel=1e-9)


def test_control_fails_on_the_energy_scaling(result):
    assert result.control.rejected
    failed = failed_quantities(result.control.evidence)
    assert any("E_(ax+bx^2)(w) vs stated scale" in q for q in failed)


def test_probes_do_not_decide_and_map_where_each_statement_breaks(result):
    assert result.inside_assumptions
    probes = {a.name: a.holds for a in result.assumptions if a.probe}
    assert probes["relu, D4: Thm. 2's maxima survive (probe)"] is False
    assert probes["1x+0.5x^2, S3: Thm. 3's reconstruction (probe)"] is True
    assert probes["1x+0.5x^2, Z4: Thm. 3's reconstruction (probe)"] is False
    assert not any(h for n, h in probes.items() if n.startswith(("relu", "silu"))
                   and "Thm. 3" in n)
    smallest = result.figures["smallest counterexample per activation and theorem"]
    assert smallest["x^2: Thm. 2 (maxima)"] == "holds on every group run"
    assert smallest["x^2: Thm. 3"] == "holds on every group run"
    assert smallest["x^2: Thm. 2 (E*)"]["group"] == "Z4"
    for act in ("relu", "silu"):
        assert smallest[f"{act}: Thm. 2 (maxima)"]["group"] == "Z4"
        assert "R2 (d=1): True, C1 (d=1): False" in smallest[f"{act}: Thm. 2 (maxima)"]["why"]


def test_a_quadratic_without_its_square_scaling_is_rejected():
    claim = get("li2.x.activations")
    variant = dataclasses.replace(claim, stated={**claim.stated,
                                                 "energy_scale": linear_in_b_scale})
    r = run_claim(variant, control=False, overrides={"groups": ("Z4",)})
    assert any("E_(ax+bx^2)(w)" in q for q in failed_quantities(r.evidence))


@given(name=st.sampled_from(["Z3", "Z4", "S3"]), a=st.floats(-3, 3), b=st.floats(0.1, 3),
       seed=SEEDS)
@settings(max_examples=20, deadline=None)
def test_the_linear_part_cancels_to_rounding(name, a, b, seed):
    task = group_task(build_group(name).table)
    w = torch.randn(4, 2 * task.M, generator=torch.Generator().manual_seed(seed),
                    dtype=torch.float64)
    e = group_energy(w, task, quadratic(a, b))
    e2 = group_energy(w, task, activation("x2"))
    bound = 4 * (task.n + task.M + 4) * 2**-53 * (
        quadratic_rounding_scale(w, task, a, b) + stated_energy_scale(a, b)
        * quadratic_rounding_scale(w, task, 0.0, 1.0))
    assert ((e - stated_energy_scale(a, b) * e2).abs() <= bound).all()


def test_quadratic_derivative_and_features():
    act = quadratic(-2.0, 0.5)
    z = torch.linspace(-2, 2, 9, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(act(z).sum(), z)
    assert torch.allclose(g, act.derivative(z.detach()))
    task = group_task(build_group("Z3").table)
    W = torch.randn(5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    F = activation_features(W, task, act)
    assert F.shape == (task.n, 5)
    assert torch.allclose(F, act(first_layer(W, task)).T)
    with pytest.raises(ValueError, match="K, 2M"):
        activation_features(W[0], task, act)


@given(seed=SEEDS)
@settings(max_examples=10, deadline=None)
def test_relu_one_sided_derivative_matches_a_finite_difference(seed):
    # away from the kink (generic w) and at it (u = sign character, v = P u: half the
    # pre-activations are exactly 0)
    gen = torch.Generator().manual_seed(seed)
    task = group_task(build_group("Z4").table)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    w = torch.stack([torch.randn(8, generator=gen, dtype=torch.float64),
                     torch.cat([sign, sign[task.inverse]])])
    w = w / w.norm(dim=-1, keepdim=True)
    xi = torch.randn(2, 6, 8, generator=gen, dtype=torch.float64)
    D = relu_directional_derivatives(w, xi, task, 1e-12)
    eps = 1e-7
    fd = (group_energy(w[:, None] + eps * xi, task, activation("relu"))
          - group_energy(w, task, activation("relu"))[:, None]) / eps
    # the finite difference errs by O(eps |xi|^2 |Hessian|) on a region without kinks
    assert torch.allclose(D, fd, atol=1e-4 * float(D.abs().max()))


def test_thm4_and_thm7_probes(result):
    probes = {a.name: a.holds for a in result.assumptions if a.probe}
    thm4 = {n: h for n, h in probes.items() if "Thm. 4" in n}
    thm7 = {n: h for n, h in probes.items() if "Thm. 7" in n}
    # D4: x^2 keeps none of its maxima on the subsamples, so Thm. 4's probe decides nothing
    assert set(thm4) == {f"{a}, Z5: Thm. 4's irrep maxima survive subsampling as with x^2 "
                         f"(probe)" for a in ("relu", "silu")}
    assert thm4["silu, Z5: Thm. 4's irrep maxima survive subsampling as with x^2 (probe)"] \
        is False
    assert len(thm7) == 4 and not any(thm7.values())
    for g in ("Z5", "D4"):
        rows = result.figures[f"{g}: Thm. 7 probe, learned component 1, ascent of E_S"]
        assert rows["x^2"]["fraction on a missing component"] == 1.0  # the anchor: Thm. 7
        assert rows["x^2"]["largest mass on the learned component"] < 1e-12
        assert rows["silu"]["fraction on a missing component"] == 0.0
        assert 0.0 < rows["relu"]["fraction on a missing component"] < 1.0
        full = result.figures[f"{g}: Thm. 4 probe, x^2's maxima on subsamples"]
        # at full data every start stays in its irrep, for every activation
        assert all(full[a]["fraction retained"][0] == 1.0 for a in ("x^2", "relu", "silu"))
