"""numerics.li2.gradient_spectrum: the alignment agrees with the trainer's own diagnostics,
checkpointing leaves the run's history as it is, the irrep power and node components on
planted inputs, the rank correlation and the stay above a level."""
import torch

from numerics.li2.gradient_spectrum import (
    Checkpointed,
    alignment,
    checkpoint_epochs,
    first_run_above,
    node_components,
    rank_correlation,
    target_power,
)
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.li2.training_diagnostics import backprop_gradient, compute
from verify.claims.li2._groups import build_group, float_projectors


def _trainer(diagnostics=()):
    G = build_group("Z7")
    hyper = Hyper.batch(seed=[0, 1], p=0.6, eta=1e-3, lr=1e-2)
    config = TrainConfig(K=12, eval_every=5, diag_every=5, diagnostics=diagnostics)
    return GroupTrainer([list(r) for r in G.table], hyper, config, dtype=torch.float64)


def test_alignment_is_the_coupling_and_gradient_groups():
    tr = _trainer()
    tr.train(7)
    s = tr.forward_snapshot()
    ours, theirs = alignment(s), compute(("gradient", "coupling"), s)
    torch.testing.assert_close(ours["global_cos"], theirs["global_cos"])
    torch.testing.assert_close(ours["gf_norm"], theirs["gf_norm"])


def test_checkpointing_leaves_the_history_as_the_uninterrupted_run():
    plain, tracked = _trainer(), _trainer()
    plain.train(40)
    ck = Checkpointed(tracked, checkpoint_epochs(5, 20, 10, 40), alignment)
    ck.train(25)
    ck.train(15)
    assert ck.epochs == [0, 5, 10, 15, 20, 30, 40]
    for name in ("train_loss", "test_acc"):
        e1, v1 = plain.history.series(name)
        e2, v2 = tracked.history.series(name)
        assert torch.equal(torch.as_tensor(e1), torch.as_tensor(e2))
        assert torch.equal(v1, v2)


def test_checkpoints_off_the_test_epochs_are_rejected():
    try:
        Checkpointed(_trainer(), [3], alignment)
    except ValueError as err:
        assert "eval_every" in str(err)
    else:
        raise AssertionError("a checkpoint between test epochs must be refused")


def test_power_adds_up_and_a_planted_node_has_its_component():
    G = build_group("Z7")
    P = float_projectors(G, "cpu", torch.float64)
    tr = _trainer()
    tr.train(5)
    s = tr.forward_snapshot()
    total = (s.Y @ backprop_gradient(s)).square().sum((-2, -1))
    torch.testing.assert_close(target_power(s, P).sum(-1), total)   # the projectors resolve 1
    basis = torch.linalg.eigh(P[2]).eigenvectors[:, -1]             # a unit vector in H_2
    W = torch.randn(1, 14, 3, dtype=torch.float64) * 1e-3
    W[0, :7, 1] += basis
    W[0, 7:, 1] += basis
    assert int(node_components(W, P)[0, 1]) == 2


def test_rank_correlation_and_stay_above():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    torch.testing.assert_close(rank_correlation(x, x[:1].expand(2, 4)),
                               torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert torch.isnan(rank_correlation(x[:1], torch.ones(1, 4))).all()
    values = torch.tensor([[0.1, 0.1], [0.9, 0.2], [0.8, 0.9], [0.3, 0.9]])
    start, stop = first_run_above([0, 5, 10, 15], values, 0.5)
    assert start.tolist() == [5.0, 10.0]
    assert stop[0] == 15.0 and torch.isnan(stop[1])
