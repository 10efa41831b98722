"""li2.x.activations: Thms. 2, 3, 4 and 7 with ReLU and SiLU as verdict items, each under its
reading for a non-quadratic sigma, where each holds and the smallest counterexample where it
does not; every item passes when x^2 itself goes through the same code, and a planted wrong
stated value is rejected.

Findings pinned down (quick grid Z2, Z3, Z4, Z5, S3, D4; Thms. 4 and 7 on Z4 and S3):

* Thm. 2, reading A (x^2's maxima stay maxima of E_sigma): holds for the real irreps of
  dimension 1 (ReLU's as sharp maxima on a kink), fails on every complex pair and every irrep
  of dimension 2; smallest Z3, C1 (SiLU: |grad_R|/|grad| 0.10, not even critical).
* Thm. 2, reading B (sigma's own certified maxima lie in one component): SiLU holds on Z2,
  Z3, Z4, S3, D4 and fails on Z5, C1 and C2 each leaking 5.48e-4 of the mass into the other
  pair; ReLU's maxima sit on kinks, none is certified (undecided; a dead node, E = 0 with a
  zero Hessian, once passed the second-order test vacuously and is now refused).
* Thm. 3 (the construction's real nodes reconstruct): fails for both from Z2 on (residual
  0.74 ReLU, 0.86 SiLU with K = 2 nodes); Z3's 8 nodes memorise (undecided).
* Thm. 4 (no larger constant than x^2): ReLU keeps more maxima than x^2 on the same
  subsamples (Z4, S3); SiLU loses every one at c ln M / M where x^2 keeps some (Z4: x^2 0.42
  and 0.08, SiLU 0 and 0).
* Thm. 7 (modulated energy peaks on missing irreps only): x^2 passes (the anchor); every
  certified maximum of SiLU's is on the learned component (Z4, S3); ReLU's are not
  certified (kinks): undecided.
"""
import dataclasses

import pytest

from tests.planted import failed_quantities
import torch

from verify.claims.li2.activations_beyond_x2 import _certified, _sign_test
from verify.registry import get
from verify.runner import run_claim


@pytest.fixture(scope="module")
def result():
    return run_claim(get("li2.x.activations"))


def _items(result, act: str, what: str) -> dict:
    """{group: ok} for the items of ``act`` whose quantity contains ``what``."""
    return {e.parameters["group"]: e.ok for e in result.evidence
            if e.quantity.startswith(f"{act}, ") and what in e.quantity}


def _item(result, act: str, group: str, what: str):
    (e,) = [e for e in result.evidence
            if e.quantity.startswith(f"{act}, {group}:") and what in e.quantity]
    return e


def test_reading_a_x2_maxima_stay_maxima_only_on_one_dimensional_real_irreps(result):
    for act in ("relu", "silu"):
        assert _items(result, act, "(reading A") == {
            "Z2": True, "Z3": False, "Z4": False, "Z5": False, "S3": False, "D4": False}
        assert _item(result, act, "Z4", "(reading A").measured == [1.0, 0.0]  # R2 yes, C1 no
        assert _item(result, act, "D4", "(reading A").measured == [1.0, 1.0, 1.0, 0.0]
    e = _item(result, "silu", "Z3", "(reading A")
    assert e.parameters["maxima"] == ["C1 (d=1)"] and e.measured == [0.0]
    row = result.figures["silu, Z3: Thm. 2 (reading A) at x^2's maxima"][0]
    assert row["|grad_R| / |grad|"] > 0.05  # not a critical point of E_silu at all


def test_reading_b_silu_maxima_leak_out_of_their_component_from_z5(result):
    assert _items(result, "silu", "(reading B)") == {
        "Z2": True, "Z3": True, "Z4": True, "Z5": False, "S3": True, "D4": True}
    # ReLU: its maxima sit on kinks, none is certified (dead nodes, E = 0, are refused)
    assert set(_items(result, "relu", "(reading B)").values()) == {None}
    e = _item(result, "silu", "Z5", "(reading B)")
    assert e.measured == pytest.approx([5.479e-4] * 2, rel=1e-3)
    assert e.tolerance.value < 1e-6 and sorted(e.parameters["maxima"]) == ["C1 (d=1)", "C2 (d=1)"]
    rows = result.figures["silu, Z5: Thm. 2 (reading B), certified maxima of E_silu"]
    assert {r["largest other component"] for r in rows} == {"C1", "C2"}
    assert all(r["largest tangent eigenvalue"] < 0 for r in rows)  # strict maxima


def test_thm3_fails_for_relu_and_silu_from_z2_and_z3_memorises(result):
    for act, z2 in (("relu", 0.74), ("silu", 0.857)):
        items = _items(result, act, "|Yhat - Yt|/|Yt|")
        assert items == {"Z2": False, "Z3": None, "Z4": False, "Z5": False, "S3": False,
                         "D4": False}
        assert _item(result, act, "Z2", "|Yhat - Yt|").measured == pytest.approx(z2, abs=1e-3)
        assert "memorise" in _item(result, act, "Z3", "|Yhat - Yt|").note


def test_thm4_relu_keeps_more_silu_fewer_than_x2(result):
    assert _items(result, "relu", "retention") == {"Z4": True, "S3": True}
    assert _items(result, "silu", "retention") == {"Z4": False, "S3": False}
    e = _item(result, "silu", "Z4", "retention")
    assert e.measured < 0 and e.parameters["p (one-sided sign test)"] < e.parameters["alpha"]
    rows = result.figures["Z4: Thm. 4 for sigma, x^2's maxima on subsamples"]
    assert rows["silu"]["fraction retained"] == [1.0, 0.0, 0.0]
    assert rows["x^2"]["fraction retained"][1] > 0.2


def test_thm7_silu_peaks_on_the_learned_irrep_relu_undecided(result):
    assert _items(result, "x^2", "E_S") == {"Z4": True, "S3": True}  # the anchor
    assert _items(result, "silu", "E_S") == {"Z4": False, "S3": False}
    assert _items(result, "relu", "E_S") == {"Z4": None, "S3": None}
    assert _item(result, "silu", "Z4", "E_S").measured == 0.0


def test_smallest_counterexamples(result):
    smallest = result.figures["smallest counterexample per activation and theorem"]
    assert smallest["silu: Thm. 2 reading B (sigma's own maxima)"]["group"] == "Z5"
    assert smallest["relu: Thm. 3"]["group"] == smallest["silu: Thm. 3"]["group"] == "Z2"
    assert smallest["silu: Thm. 4 (subsampling)"]["group"] == "Z4"
    assert smallest["relu: Thm. 4 (subsampling)"] == "holds on every group run"
    assert smallest["silu: Thm. 7 (top-down)"]["group"] == "Z4"


def test_every_sigma_item_passes_for_x2_through_the_same_code():
    # x^2 passed as a sigma goes through ReLU's and SiLU's code: every item holds, so what
    # fails for them is the activation, not the check
    r = run_claim(get("li2.x.activations"), control=False,
                  overrides={"groups": ("Z4", "Z5"), "sigmas": ("x2",), "quadratics": (),
                             "thm4_7_groups": ("Z4",)})
    items = [e for e in r.evidence if e.quantity.startswith("x2, ")]
    kinds = ("(reading A", "(reading B)", "|Yhat - Yt|", "retention", "E_S")
    assert {k for k in kinds for e in items if k in e.quantity} == set(kinds)
    assert items and all(e.ok is True for e in items)


@pytest.mark.parametrize("form, value, where", [
    ("leak", lambda: 1e-3, "silu, Z4: mass outside"),
    ("keeps_maxima", lambda: 0, "relu, Z2: each of x^2's maxima"),
    ("missing_fraction", lambda: 0, "x^2, Z4: fraction of the local maxima of E_S"),
])
def test_a_planted_wrong_stated_value_is_rejected(form, value, where):
    claim = get("li2.x.activations")
    variant = dataclasses.replace(claim, stated={**claim.stated, form: value})
    r = run_claim(variant, control=False,
                  overrides={"groups": ("Z2", "Z4"), "quadratics": (), "thm4_7_groups": ("Z4",)})
    assert any(q.startswith(where) for q in failed_quantities(r.evidence))


def test_sign_test():
    assert _sign_test(0, 0) == 1.0
    assert _sign_test(10, 0) == pytest.approx(2.0**-10)
    assert _sign_test(0, 10) == 1.0
    assert _sign_test(3, 3) == pytest.approx(42 / 64)  # P(Bin(6, 1/2) >= 3)


def test_certification_refuses_dead_nodes_kinks_and_far_points():
    u = 2.0**-53
    spectra = torch.tensor([[-1.0, -0.5, -0.1],   # a strict maximum
                            [0.0, 0.0, 0.0],      # a dead node: E = 0, zero Hessian
                            [-1.0, -0.5, 0.2],    # a saddle
                            [-1.0, -0.5, -0.1],   # too far from its critical point
                            [-1.0, -0.5, -0.1]],  # its critical point beyond a kink
                           dtype=torch.float64)
    grad = torch.tensor([1e-12, 0.0, 1e-12, 1e-3, 1e-8], dtype=torch.float64)
    gap = torch.tensor([1.0, 1.0, 1.0, 1.0, 1e-8], dtype=torch.float64)
    ok, r = _certified(spectra, grad, u, gap)
    assert ok.tolist() == [True, False, False, False, False]
    assert float(r[0]) == pytest.approx(1e-11)
    # without kinks (a smooth sigma) the last point is certified
    assert _certified(spectra, grad, u)[0].tolist() == [True, False, False, False, True]
