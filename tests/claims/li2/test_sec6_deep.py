"""li2.sec6-deep: the quick run (findings, rejected control), and the deep network's pieces:
the per-unit chain and the residual decomposition against autograd, scale invariance, purity,
rise epochs, and the trainer's history."""
import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.deep_group_network import (
    HOMOGENEITY,
    DeepConfig,
    DeepGroupTrainer,
    IrrepBasis,
    band_purity,
    centred_labels,
    cosine,
    effective,
    gated_approximation,
    identity_deviation,
    init_params,
    layer_gradients,
    residual_terms,
    rise_epochs,
)
from numerics.li2.group_task import group_task
from numerics.li2.init_sweep_points import BELOW_AT_START
from numerics.li2.trainer import Hyper
from numerics.random import make_generator
from numerics.li2.train_splits import random_splits
from verify.claims.li2.sec6_deep import one_sided_chain, stated_chain
from verify.claims.li2._groups import build_group, float_projectors
from verify.claims.li2._trained import TRAINED
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.sec6-deep"))


def _item(result, text):
    (e,) = [e for e in result.evidence if text in e.quantity]
    return e


def test_holds_and_fails_on_the_documented_items(quick):
    for text in ("the paper's product", "relu: cosine independent", "x2: cosine independent",
                 "G_res,1", "G_L term dominates", "plain: the lowest layer",
                 "depth 2 -> 3", "depth 3 -> 4", "depth 2: the lowest layer",
                 "depth 3: the lowest layer", "depth 4: the lowest layer"):
        assert _item(quick, text).ok is True, text
    # the findings: no improvement with width, and W W^T does not approach I
    for text in ("relu: 1 - cos", "x2: 1 - cos", "||W_L W_L^T - I||"):
        assert _item(quick, text).ok is False, text
    assert _item(quick, "relu: 1 - cos").measured["interval"][1] < 0.2


@pytest.mark.parametrize("form, wrong, text", [
    ("residual_sum", lambda terms: sum(terms[1:]), "G_res,1"),      # the top term dropped
    ("bottom_up", lambda: -1.0, "plain: the lowest layer"),         # top-down
    ("deeper_later", lambda: -1.0, "depth 3 -> 4"),                 # deeper is faster
    ("lowest_fourier", lambda: -1.0, "depth 4: the lowest layer"),  # not Fourier
    ("chain", one_sided_chain, "the paper's product"),
])
def test_each_passing_route_can_fail(quick, form, wrong, text):
    claim = get("li2.sec6-deep")
    variant = dataclasses.replace(claim, stated={**claim.stated, form: wrong})
    result = run_claim(variant, control=False)       # the trainings are cached
    assert _item(result, text).ok is False


def test_a_training_left_at_chance_makes_the_verdict_inconclusive(quick):
    # Adam at lr 10 leaves both architectures near chance 1/11: their rise epochs say nothing
    archs = [f"{arch}: {TRAINED}" for arch in ("plain", "residual")]
    ran = [(a.name, a.holds) for a in quick.assumptions if a.source == "ran"]
    assert ran == [(name, True) for name in archs + [f"depth {d}: {TRAINED}" for d in (2, 3, 4)]
                   + [f"depth: {BELOW_AT_START}"]]
    result = run_claim(get("li2.sec6-deep"), overrides={"train.lr": 10.0}, control=False)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert [a.holds for a in result.assumptions if a.source == "ran" and a.name in archs] == [
        False, False]


def test_fig9_deeper_grokks_later_and_the_lowest_layer_stays_fourier(quick):
    table = quick.figures["Fig. 9: grokking time and lowest-layer purity by depth"]
    medians = [table[f"depth {d}, t_0.5"]["median epochs"] for d in (2, 3, 4)]
    assert medians == sorted(medians)
    for d in (2, 3, 4):
        purity = table[f"depth {d}, lowest layer purity"]
        # the control: the random initial layer lies below the level of 1/2 on every seed
        assert max(purity["random init"]) < 0.5
    # a level the random layer already reaches decides nothing
    result = run_claim(get("li2.sec6-deep"), overrides={"depth.group": "Z7"}, control=False)
    for d in (2, 3, 4):
        assert _item(result, f"depth {d}: the lowest layer").ok is None


def _net(seed, M, K, layers, act, residual, scale=1.0):
    G = build_group(f"Z{M}")
    hyper = Hyper.batch(seed=[seed, seed + 1], p=0.8, init_scale=scale)
    config = DeepConfig(K=K, layers=layers, activation=act, residual=residual)
    S, _ = random_splits(group_task(G.table), hyper.p, hyper.data_seed, torch.float64)
    return init_params(hyper, M, config), S, config


NETS = {"seed": st.integers(0, 2**31 - 2), "M": st.sampled_from([3, 5, 7]),
        "K": st.integers(2, 12), "layers": st.integers(2, 4),
        "act": st.sampled_from(sorted(HOMOGENEITY)), "residual": st.booleans()}


@settings(max_examples=15)
@given(**NETS)
def test_the_per_unit_chain_is_autograd(seed, M, K, layers, act, residual):
    params, S, config = _net(seed, M, K, layers, act, residual)
    G, fw = layer_gradients(params, S, M, config, "energy")
    W = effective(params[f"W{layers}"], residual)
    D = activation(act).derivative(fw.pre[-1])
    Yt = centred_labels(S, M)
    stated = stated_chain(D, Yt, fw.F[-2], W, HOMOGENEITY[act])
    torch.testing.assert_close(stated, G[-2], rtol=1e-10, atol=1e-12 * float(G[-2].abs().max()))
    Z = fw.pre[-1]
    # a ReLU unit whose gate is all open (or all shut) is the same under both forms
    if act == "x2" or bool(((Z > 0).any(1) & (Z < 0).any(1)).any()):
        wrong = one_sided_chain(D, Yt, fw.F[-2], W, HOMOGENEITY[act])
        assert not torch.allclose(wrong, G[-2], rtol=1e-3, atol=0)


@settings(max_examples=15)
@given(**{**NETS, "residual": st.just(True)}, objective=st.sampled_from(["energy", "loss"]))
def test_residual_terms_sum_to_autograd(seed, M, K, layers, act, residual, objective):
    params, S, config = _net(seed, M, K, layers, act, residual)
    G1, terms = residual_terms(params, S, M, config, objective)
    assert len(terms) == layers
    torch.testing.assert_close(sum(terms), G1, rtol=1e-10, atol=1e-12 * float(G1.abs().max()))


@settings(max_examples=10)
@given(seed=st.integers(0, 2**31 - 2), act=st.sampled_from(sorted(HOMOGENEITY)),
       scale=st.floats(0.2, 5.0))
def test_the_cosine_is_scale_free_in_a_plain_network_only(seed, act, scale):
    def cos(residual, s):
        params, S, config = _net(seed, 5, 8, 3, act, residual, s)
        G, fw = layer_gradients(params, S, 5, config, "energy")
        return cosine(G[-2], gated_approximation(fw.F[-2], fw.pre[-1], centred_labels(S, 5),
                                                 act))

    torch.testing.assert_close(cos(False, scale), cos(False, 1.0), rtol=1e-12, atol=1e-12)
    if abs(scale - 1) > 0.5:       # the skip makes the residual network's cosine move
        assert not torch.allclose(cos(True, scale), cos(True, 1.0), rtol=1e-6, atol=0)


@settings(max_examples=20)
@given(seed=st.integers(0, 2**31 - 1), M=st.sampled_from([5, 7, 8]), k=st.integers(1, 3))
def test_purity_is_one_for_a_fourier_first_layer_node_and_lies_in_0_1(seed, M, k):
    basis = IrrepBasis.from_projectors(float_projectors(build_group(f"Z{M}")))
    g = make_generator(seed)
    h = torch.arange(M, dtype=torch.float64)
    a, b, c, d = torch.randn(4, generator=g, dtype=torch.float64)
    u = a * torch.cos(2 * torch.pi * k * h / M) + b * torch.sin(2 * torch.pi * k * h / M)
    v = c * torch.cos(2 * torch.pi * k * h / M) + d * torch.sin(2 * torch.pi * k * h / M)
    fourier = (u[:, None] + v[None, :]).reshape(1, M * M, 1) + 3.0     # plus a constant
    torch.testing.assert_close(band_purity(fourier, basis), torch.ones(1, dtype=torch.float64))
    Z = torch.randn(2, M * M, 6, generator=g, dtype=torch.float64)
    p = band_purity(Z, basis)
    assert bool(((p > 0) & (p <= 1)).all())
    torch.testing.assert_close(band_purity(Z * torch.rand(6, generator=g, dtype=torch.float64)
                                           + 1, basis), p)


def test_rise_epochs_and_censoring():
    epochs = torch.tensor([0, 5, 10, 15])
    purity = torch.tensor([[[0.2, 0.4]], [[0.3, 0.4]], [[0.5, 0.41]], [[0.9, float("nan")]]],
                          dtype=torch.float64)                          # (D, B=1, L=2)
    t, reached = rise_epochs(epochs, purity, 0.25)                     # targets 0.4, 0.55
    assert t.tolist() == [[10.0, 15.0]] and reached.tolist() == [[True, False]]


def test_identity_deviation_vanishes_only_for_orthogonal_weights():
    q, _ = torch.linalg.qr(torch.randn(16, 16, generator=make_generator(0),
                                       dtype=torch.float64))
    dev = identity_deviation(q[None] * 0.1, 0.01 / 16)               # variance 1/K scaled
    assert float(dev["rel_fro"]) < 1e-12
    W = torch.rand(1, 64, 64, generator=make_generator(1), dtype=torch.float64) * 2 - 1
    assert float(identity_deviation(W, 1 / 3)["rel_fro"]) > 0.8         # square: ~1


def test_training_in_pieces_records_what_one_call_records():
    G = build_group("Z5")
    hyper = Hyper.batch(seed=[0, 1], eta=1e-3, lr=1e-2, p=0.6)
    config = DeepConfig(K=8, layers=2, residual=True)

    def trainer():
        return DeepGroupTrainer(G.table, hyper, config, projectors=float_projectors(G),
                                eval_every=2, purity_every=3, dtype=torch.float64)

    one, two = trainer(), trainer()
    one.train(8)
    two.train(4)
    two.train(4)          # also evaluates at 4, the end of its first call
    for name in ("train_loss", "test_acc", "purity"):
        e1, v1 = one.history.series(name)
        e2, v2 = two.history.series(name)
        assert set(e1.tolist()) <= set(e2.tolist())
        torch.testing.assert_close(v1, v2[[e2.tolist().index(t) for t in e1.tolist()]])
    e, _ = two.history.series("train_loss")
    assert e.tolist() == list(range(9))                                 # each epoch once
