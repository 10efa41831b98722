"""numerics.li2.regime_map: the eigenbasis sums of the ridge limit agree with G* formed by a
Cholesky solve, also at small weight decay with fewer features than samples (K < n), where
the Gram's zero eigenvalues must count as zero, not as u lambda_max."""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.regime_map import explicit_limit, gram_spectrum, limit_structure


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([1e-6, 1e-4, 1e-2, 1.0]),
       st.integers(2, 10))
def test_eigenbasis_sums_match_the_explicit_limit_at_small_eta(seed, eta, K):
    gen = torch.Generator().manual_seed(seed)
    n, M = 16, 4
    F = torch.randn(1, n, K, generator=gen, dtype=torch.float64)
    Ft = F - F.mean(-2, keepdim=True)
    Y = torch.eye(M, dtype=torch.float64)[torch.randint(M, (n,), generator=gen)]
    Yt = Y - Y.mean(0, keepdim=True)
    s = limit_structure(gram_spectrum(Ft, Yt), torch.tensor([eta], dtype=torch.float64))
    G, D = explicit_limit(Ft[0], Yt, eta)
    GD, GG = (G * D).sum(), (G * G).sum()
    # the Cholesky route errs by ~kappa(Ft^T Ft + eta I) u relative; 1e3 u kappa covers it
    kappa = torch.linalg.cond(Ft[0].T @ Ft[0] + eta * torch.eye(K, dtype=torch.float64))
    tol = 1e3 * torch.finfo(torch.float64).eps * float(kappa)
    assert abs(float(s.GD[0, 0]) - float(GD)) <= tol * float(GG.sqrt() * (D * D).sum().sqrt())
    assert abs(float(s.GG[0, 0]) - float(GG)) <= tol * float(GG)
