"""numerics.li2.loss_hessian: the loss against the trainer's, the Lanczos eigenvalues against a
dense Hessian, the balanced representative and the invariances of the normalised sharpness."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.loss_hessian import (
    TrainingPairs,
    _unflatten,
    balance,
    data_loss,
    euler_floor,
    flatten,
    outputs,
    sharpness,
    top_eigenvalues,
)
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from verify.claims.li2._groups import build_group


def _problem(seed: int, M: int = 5, K: int = 4, n: int = 12):
    g = torch.Generator().manual_seed(seed)
    index = torch.randperm(M * M, generator=g)[:n]
    data = TrainingPairs(index // M, index % M, (index // M + index % M) % M, M)
    W = torch.randn(2 * M, K, generator=g, dtype=torch.float64)
    V = torch.randn(K, M, generator=g, dtype=torch.float64)
    return W, V, data


def test_the_loss_is_the_trainers_class_centred_mse():
    G = build_group("Z5")
    trainer = GroupTrainer([list(r) for r in G.table], Hyper.batch(seed=[3], p=0.6),
                           TrainConfig(K=6, diagnostics=()), dtype=torch.float64)
    loss, _, _ = trainer.gradients()
    S = trainer.train_set
    real = S.weight[0] > 0
    index = S.index[0][real]
    data = TrainingPairs(index // 5, index % 5, S.target[0][real], 5)
    assert torch.isclose(data_loss(trainer.W[0], trainer.V[0], data), loss[0], rtol=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_lanczos_finds_the_dense_hessians_top_eigenvalues(seed):
    W, V, data = _problem(seed)
    M, K = data.M, W.shape[1]
    H = torch.func.hessian(lambda t: data_loss(*_unflatten(t, M, K), data))(flatten(W, V))
    dense = torch.linalg.eigvalsh(H).flip(0)[:3].numpy()
    # Lanczos to relative accuracy 1e-6 (its default); the dense route is exact to rounding
    assert np.allclose(top_eigenvalues(W, V, data, 3), dense, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.2, 5.0))
def test_balancing_keeps_the_function_and_is_the_smallest_norm_on_the_orbit(seed, a):
    W, V, data = _problem(seed)
    Wb, Vb = balance(W, V)
    assert torch.allclose(outputs(Wb, Vb, data), outputs(W, V, data), rtol=1e-10)
    assert torch.allclose(Wb.square().sum(0), 2 * Vb.square().sum(1), rtol=1e-10)
    # any other point of a node's orbit is longer
    W2, V2 = Wb.clone(), Vb.clone()
    W2[:, 0] *= a
    V2[0] /= a**2
    assert flatten(W2, V2).norm() >= flatten(Wb, Vb).norm() * (1 - 1e-12)
    # the balanced point depends on the orbit only
    Wc, Vc = balance(W2, V2)
    assert torch.allclose(Wc, Wb, rtol=1e-10) and torch.allclose(Vc, Vb, rtol=1e-10)


def test_the_euler_floor_is_the_gauss_newton_curvature_along_theta():
    W, V, data = _problem(7)
    M, K = data.M, W.shape[1]
    theta = flatten(W, V)
    J = torch.func.jacrev(lambda t: outputs(*_unflatten(t, M, K), data))(theta)  # (n, M, d)
    PJ = J - J.mean(1, keepdim=True)
    gauss_newton = 2 * torch.einsum("imd,ime->de", PJ, PJ) / data.n
    along = theta @ gauss_newton @ theta / theta.square().sum()
    assert torch.isclose(euler_floor(W, V, data), along, rtol=1e-10)
    assert torch.linalg.eigvalsh(gauss_newton)[-1] >= along * (1 - 1e-12)


def test_the_normalised_sharpness_ignores_rescaling_a_node():
    W, V, data = _problem(11)
    W2, V2 = W.clone(), V.clone()
    W2[:, 1] *= 3.0
    V2[1] /= 9.0
    a, b = sharpness(W, V, data, 2), sharpness(W2, V2, data, 2)
    assert a.normalised == pytest.approx(b.normalised, rel=1e-5)
    # lambda_max of the raw weights is not invariant: the balancing is what makes it so
    assert not np.isclose(top_eigenvalues(W, V, data, 1)[0], top_eigenvalues(W2, V2, data, 1)[0],
                          rtol=1e-2)


def test_k_must_leave_room():
    W, V, data = _problem(0)
    with pytest.raises(ValueError, match="k"):
        top_eigenvalues(W, V, data, 0)
