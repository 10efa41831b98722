r"""li2.prop3: Proposition 3, no weight decay (:math:`\eta = 0`): under (A1)-(A2)
:math:`G_{\tilde F}(t) \to 0` with :math:`\|G_{\tilde F}(t)\| \le C_0e^{-\sigma_{\min}^2t}`, and
each singular direction of :math:`G_{\tilde F}` is a combination of
:math:`e^{-(\sigma_i^2+\sigma_{i'}^2)t}` and :math:`e^{-\sigma_i^2t}`.

Routes: the flow solved exactly in singular coordinates (sympy ``dsolve`` of
:math:`\dot V = -\partial J/\partial V`, :math:`G = -\partial J/\partial\tilde F`), where
:math:`(\partial_t + r_1)(\partial_t + r_2)` with the stated rates must annihilate every
component (derived vs stated); the RK4 flow with autograd :math:`G_F`, projected on the singular
vectors and fitted with the stated exponentials, its decay rate fitted late, and its norm
against :math:`C_0e^{-\sigma_{\min}^2t}` (measured); the rate and the bound again on a
spectrum with :math:`\sigma_{\min}` far from 0 and 1 (``rate_cases``), where a wrong power of
:math:`\sigma_{\min}` changes the rate. Outside (A2) the limit is not 0: the
smallest case (n = 3, K = 1, M = 2) is derived exactly and reported as a probe.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import sympy as sp
import torch

from numerics.random import randn
from numerics.li2.stage1_problems import balanced_labels, realisable_features_with_spectrum
from numerics.li2.top_layer_flow import (
    RidgeSolution,
    centred_features_with_spectrum,
    deviation_bound,
    integrate_top_layer_flow,
    stable_step,
)
from numerics.li2.two_layer import center
from numerics.slopes import exponential_rate
from theory.li2.stage1_expansion import (
    annihilated,
    derive_eta0_modes,
    smallest_nonrealisable_case,
)
from verify import (
    RESOLVED,
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_most,
    compare,
    conditioned,
    register,
    symbolic_identity,
    undecided,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._flow_step import STEP_SAFETY
from verify.claims.li2._stage1 import record_data_assumptions


#: torch's default CPU driver, gelsy (MKL, pivoted QR), returns different last digits in
#: different processes on the same input, even on one thread; the SVD-based gelsd gives the
#: same bits in every run (and the minimum-norm solution where a basis is rank-deficient).
LSTSQ_DRIVER = "gelsd"


def stated_mode_rates(sigma_i, sigma_j):
    r"""The two rates of singular direction :math:`(i, i')`: :math:`\sigma_i^2` and
    :math:`\sigma_i^2 + \sigma_{i'}^2` (sympy or floats)."""
    return sigma_i**2, sigma_i**2 + sigma_j**2


def stated_decay_rate(sigma_min):
    r"""The bound's exponent :math:`\sigma_{\min}^2`."""
    return sigma_min**2


def swapped_mode_rates(sigma_i, sigma_j):
    """Planted error: the single-mode rate taken from the column direction i' instead of i."""
    return sigma_j**2, sigma_i**2 + sigma_j**2


def _symbolic(run: Run) -> Iterator[Evidence]:
    s = run.params["symbolic_size"]
    modes = run.derivation(run.memo("eta0 modes", lambda: derive_eta0_modes(
        s["K"], s["M"], s["extra"]), key=str(s), scope="process")).result
    K = s["K"]
    rates = run.stated["mode_rates"]
    residual = modes.G.copy()
    for i in range(K):
        for j in range(K):
            residual[i, j] = annihilated(modes.G[i, j], modes.t,
                                         rates(modes.sigma[i], modes.sigma[j]))
    yield symbolic_identity(
        "(d/dt + r1)(d/dt + r2) G_ij = 0 with the stated rates (rows beyond K: G itself = 0)",
        stated=residual, derived=sp.zeros(*residual.shape),
        parameters={**s, "n": K + s["extra"]},
        note="annihilated exactly iff G_ij is a combination of exp(-r1 t) and exp(-r2 t)")


def _problem(run: Run, p: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = run.generator("flow problem")
    Y = balanced_labels(1, p["n"], p["M"], gen)[0]
    s = torch.tensor(p["singular_values"], dtype=torch.float64)
    if p["M"] - 1 <= p["K"]:
        F = realisable_features_with_spectrum(Y, s, p["K"], gen)
    else:  # (A2) cannot hold (a stress setting): the spectrum in random directions
        F = centred_features_with_spectrum(p["n"], s, p["K"], gen)
    V0 = p["alpha"] * randn(p["inits"], p["K"], p["M"], generator=gen)
    cast = {"device": run.device, "dtype": run.dtype}
    return F.to(**cast), Y.to(**cast), V0.to(**cast)


def _rk4_mode_error(z: float) -> float:
    r"""Bound on :math:`|R(z)^k - e^{-kz}|` over all k, for :math:`0 < z \le 1/2`:
    :math:`R(z) \ge e^{-z}` and :math:`R - e^{-z} \le z^5/120`, so the gap is at most
    :math:`k\,(z^5/120)R^{k-1}`, whose maximum over k is :math:`(z^5/120)e^{z''-1}/z''`,
    :math:`z'' = -\ln R(z) \ge z - z^5/120`."""
    z2 = z - z**5 / 120
    return z**5 / 120 * math.exp(z2 - 1) / z2


def _resolved(relative_tolerance: float, item: Evidence) -> Evidence:
    """``item``, or undecided when its tolerance is not below ``RESOLVED`` of the compared
    quantity (e.g. float32, whose worst-case roundoff floor swamps the late flow): a check
    that cannot tell the stated form from a wrong one must not pass."""
    if relative_tolerance < RESOLVED:
        return item
    return undecided(item.route, item.quantity,
                     f"tolerance {relative_tolerance:.2g} of the quantity's scale is not below "
                     f"{RESOLVED}: not resolved at this precision ({item.tolerance.why})",
                     tolerance=item.tolerance, parameters=item.parameters)


@dataclass(frozen=True)
class Flow:
    r"""The :math:`\eta = 0` RK4 run and what the tolerances need: the thin SVD
    :math:`\tilde F = U\,\mathrm{diag}(s)\,W^\top`, :math:`V^\star`, :math:`D_0 = V_0 -
    V^\star`, :math:`C_0 = s_{\max}\|D_0\|_F(\|V^\star\|_2 + \|D_0\|_2)` per init, the
    fit window, and the worst-case relative roundoff :math:`8k(n+K)u` of k steps."""

    Ft: torch.Tensor
    V0: torch.Tensor
    U: torch.Tensor
    s: torch.Tensor
    W: torch.Tensor
    fixed: RidgeSolution
    D0: torch.Tensor
    C0: torch.Tensor
    dt: float
    steps: int
    window: tuple[float, float]
    times: torch.Tensor
    G: torch.Tensor  # (R, B, n, K)
    roundoff: float

    @property
    def lam1(self) -> float:
        return float(self.s[-1]) ** 2


def _flow(run: Run, p: dict, label: str) -> Flow:
    F, Y, V0 = _problem(run, p)
    Ft, Yt = center(F), center(Y)
    record_data_assumptions(run, Ft[None], Yt[None], label, realisable=True)
    U, s, Wh = torch.linalg.svd(Ft, full_matrices=False)
    V_star = torch.linalg.lstsq(Ft, Yt, driver=LSTSQ_DRIVER).solution
    E_star = Yt - Ft @ V_star
    dt = stable_step(F, 0.0, p["step_safety"])
    log_u = math.log(1 / unit_roundoff(run.dtype))
    t_a, t_b = (w * log_u / float(s[-1]) ** 2 for w in p["window"])
    steps = math.ceil(t_b / dt)
    # The flow does not depend on the stated forms: the negative control's run reuses it.
    traj = run.memo("flow", lambda: integrate_top_layer_flow(
        F, Y, V0, 0.0, dt=dt, steps=steps, record_every=max(1, steps // p["records"])),
        key=tuple(p["singular_values"]))
    D0 = V0 - V_star
    C0 = float(s[0]) * torch.linalg.matrix_norm(D0) * (
        float(torch.linalg.matrix_norm(V_star, ord=2)) + torch.linalg.matrix_norm(D0, ord=2))
    return Flow(Ft=Ft, V0=V0, U=U, s=s, W=Wh.T,
                fixed=RidgeSolution(V=V_star, E=E_star, G=E_star @ V_star.T), D0=D0, C0=C0,
                dt=dt, steps=steps, window=(t_a, t_b), times=traj.times.to(run.dtype),
                G=traj.G_F, roundoff=8 * steps * sum(Ft.shape) * unit_roundoff(run.dtype))


def _modes(run: Run, f: Flow) -> Evidence:
    """Every singular direction u_i^T G(t) w_j, fitted by the two stated exponentials."""
    g = (f.U.T @ f.G @ f.W).double()  # (R, B, K, K)
    s = f.s.double()
    r1, r2 = torch.broadcast_tensors(*run.stated["mode_rates"](s[:, None], s[None, :]))
    t = f.times.double()
    basis = torch.stack([torch.exp(-r1[..., None] * t), torch.exp(-r2[..., None] * t)],
                        dim=-1)  # (K, K, R, 2)
    target = g.permute(1, 2, 3, 0)[..., None]  # (B, K, K, R, 1)
    coef = torch.linalg.lstsq(basis.expand(target.shape[0], *basis.shape), target,
                              driver=LSTSQ_DRIVER).solution
    fitted = (basis @ coef)[..., 0].permute(3, 0, 1, 2)  # (R, B, K, K)
    # RK4 gives g_ij = -s_i R_i^k P_ij - s_i R_i^k Q_ij R_j^k exactly (P = W^T D0 V*^T W,
    # Q = W^T D0 D0^T W): each factor R^k is within eps of its exponential, so the exact-rate
    # combination misses by eps s_i (|P_ij| + 2|Q_ij|); the least-squares fit's residual is
    # no larger in the 2-norm over the R records, hence at most sqrt(R) times that in max.
    P = f.W.T @ f.D0 @ f.fixed.V.T @ f.W
    Q = f.W.T @ f.D0 @ f.D0.transpose(-1, -2) @ f.W
    amplitude = float((f.s[:, None] * (P.abs() + 2 * Q.abs())).max())
    z = f.dt * float(f.s[0]) ** 2
    eps, R = _rk4_mode_error(z), f.times.numel()
    tol = math.sqrt(R) * eps * amplitude + f.roundoff * float(f.C0.max())
    n, K = f.Ft.shape
    return _resolved(tol / float(g.abs().max()), compare(
        Route.NUMERIC, "u_i^T G_F(t) w_j vs its fit by the stated exponentials, every singular "
                       "direction, whole trajectory", stated=fitted, measured=g,
        metric="absolute",
        tolerance=Tolerance(tol, f"RK4's R(z)^k within {eps:.1e} of exp(-kz) (z <= {z:.3g}), "
                                 f"on amplitudes s_i(|P_ij| + 2|Q_ij|) <= {amplitude:.3g}, x "
                                 f"sqrt(R = {R}) for the least-squares fit's max-norm, + "
                                 f"roundoff 8 k (n+K) u C0"),
        parameters={"n": n, "K": K, "dt": f.dt, "steps": f.steps, "inits": f.V0.shape[0]}))


def _bound(run: Run, f: Flow, suffix: str = "") -> Evidence:
    """||G(t)||_F <= C0 exp(-decay t) at every record."""
    norms = torch.linalg.matrix_norm(f.G)  # (R, B)
    decay = float(run.stated["decay_rate"](f.s[-1]))
    bound = f.C0[None] * torch.exp(-decay * f.times)[:, None]
    # RK4's slowest factor R(z1)^k exceeds exp(-k z1) by at most exp(k z1^5/120); roundoff
    # 8 k (n+K) u C0 in ||G|| moves the relative violation by at most that over ||G||.
    z1 = f.dt * f.lam1
    slack = math.expm1(f.steps * z1**5 / 120) + f.roundoff * float(f.C0.max()) \
        / float(norms.min())
    return _resolved(slack, at_most(
        Route.NUMERIC, f"||G_F(t)||_F <= C0 exp(-sigma_min^2 t) along the flow{suffix}",
        measured=norms, bound=bound,
        tolerance=Tolerance(slack, "RK4's slowest mode decays slower than exp(-sigma_min^2 t) "
                                   "by exp(k z^5/120) at most, + roundoff 8 k (n+K) u C0 over "
                                   "the smallest ||G||"),
        parameters={"C0": "s_max ||D0||_F (||V*||_2 + ||D0||_2)", "T": f.window[1]}))


def _rate(run: Run, f: Flow, suffix: str = "") -> Evidence:
    """The decay rate of ||G||, fitted where the slowest mode dominates."""
    norms = torch.linalg.matrix_norm(f.G).cpu().double().numpy()  # (R, B)
    t_a, t_b = f.window
    late = (f.times >= t_a).cpu().numpy()
    t_fit = f.times.cpu().double().numpy()[late]
    rates = np.array([exponential_rate(t_fit, norms[late, b]) for b in range(norms.shape[1])])
    dev = deviation_bound(f.Ft, 0.0, f.V0, f.fixed, f.dt)
    lam1 = f.lam1
    bias = float(dev.slope_bias(t_a).max()) / lam1
    rk4 = abs(float(dev.lam_hat[0]) - lam1) / lam1
    # Roundoff in the fitted logs: delta <= floor / ||G|| at the window's end; a least-squares
    # slope over a span L moves by at most 4 max|delta| / L.
    delta = f.roundoff * float(f.C0.max()) / float(norms[-1].min())
    noise = 4 * delta / (t_b - t_a) / lam1
    ones = np.ones(norms.shape[1])
    return _resolved(bias + rk4 + noise, compare(
        Route.RATE, f"decay rate of ||G_F(t)||: late fit vs stated sigma_min^2 vs "
                    f"lambda_min(Ft^T Ft){suffix}",
        stated=float(run.stated["decay_rate"](f.s[-1])) * ones,
        derived=float(dev.lam[0]) * ones, measured=rates,
        tolerance=Tolerance(bias + rk4 + noise,
                            f"slope bias {bias:.1e} (next mode and D D^T term after lam1 t_a = "
                            f"{lam1 * t_a:.1f}) + RK4 rate offset {rk4:.1e} + roundoff in the "
                            f"logs {noise:.1e}"),
        parameters={"window": [t_a, t_b], "singular_values": f.s.tolist()}))


def _rate_identity(run: Run, f: Flow, suffix: str = "") -> Evidence:
    r"""The stated rate against the rate of the derived linear flow :math:`\dot V=-AV+B`,
    :math:`\lambda_{\min}(A)`, :math:`A=\tilde F^\top\tilde F`: the same number by two
    factorisations, so to roundoff (the fit above cannot resolve a 0.1% wrong rate, this can)."""
    A = f.Ft.transpose(-1, -2) @ f.Ft
    lam = torch.linalg.eigvalsh(A)
    kappa = float(lam[-1] / lam[0])
    # eigh moves lambda_min by ~K u ||A||, the SVD moves s_min^2 by ~2 n u s_max s_min:
    # relative to lambda_min both are within 4 n kappa(A) u.
    tolerance = conditioned(run.dtype, kappa, max(f.Ft.shape), "lambda_min(A) by eigh vs "
                            "s_min^2 by the SVD")
    return _resolved(tolerance.value, compare(
        Route.NUMERIC, f"decay rate: stated sigma_min^2 vs lambda_min(Ft^T Ft), the derived "
                       f"flow's slowest rate{suffix}",
        stated=float(run.stated["decay_rate"](f.s[-1])), derived=float(lam[0]),
        tolerance=tolerance, parameters={"singular_values": f.s.tolist()}))


def _numeric(run: Run) -> Iterator[Evidence]:
    f = _flow(run, run.params["flow"], "flow problem")
    yield _modes(run, f)
    yield _bound(run, f)
    yield _rate(run, f)
    yield _rate_identity(run, f)
    norms = torch.linalg.matrix_norm(f.G)
    run.figure("||G_F(T)|| / ||G_F(0)|| (G -> 0)", (norms[-1] / norms[0]).tolist())
    # The stated rate again where sigma_min is far from 0 and 1, so that a wrong power of
    # it (sigma_min^2.5 equals sigma_min^2 at 1) changes the rate.
    for case in run.params["rate_cases"]:
        label = f"rate case {case['name']}"
        g = _flow(run, {**run.params["flow"], "singular_values": case["singular_values"]},
                  label)
        yield _bound(run, g, f" ({label})")
        yield _rate(run, g, f" ({label})")
        yield _rate_identity(run, g, f" ({label})")


def _probes(run: Run) -> None:
    _, G_limit, _ = run.derivation(run.memo("smallest non-realisable case",
                                            smallest_nonrealisable_case,
                                            scope="process")).result
    run.assume("A2 realisable (probe: smallest non-realisable case)", False,
               "col(Yt) in col(Ft); without it the eta = 0 flow ends at G != 0",
               f"n=3, K=1, M=2, F=(0,1,3), labels (0,1,0): G(+inf) = "
               f"{[str(x) for x in G_limit]} != 0", probe=True)
    p = run.params["spectrum_figure"]
    gen = run.generator("spectrum figure")
    sigma_min = {}
    for K in p["Ks"]:
        F = randn(p["seeds"], p["n"], K, generator=gen)
        sigma_min[f"K/n={K / p['n']:.3g}"] = float(torch.linalg.svdvals(center(F))[:, -1]
                                                   .mean())
    run.figure(f"mean sigma_min(Ft) of Gaussian features vs K/n (n={p['n']}): the rate "
               "sigma_min^2 collapses as K -> n-1", sigma_min)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _numeric(run)
    _probes(run)


# A gap sigma_1 -> sigma_2 (rates 1 and 4) keeps the fitted rate clear of the next mode; the
# step dt = 0.2 / lambda_max makes RK4's per-mode error ~1e-6 of each exponential.
_FLOW = {"M": 3, "alpha": 0.1, "inits": 4, "step_safety": 0.2, "window": (0.25, 0.4),
         "records": 100}
# sigma_min = 1.6 with the same gap ratio: sigma_min^2 = 2.56, sigma_min^2.5 = 3.24.
_RATE_CASE = {"name": "sigma_min=1.6", "singular_values": [1.6, 3.2, 3.5, 3.8, 4.1, 4.4]}
#: Stress spectra (K = 6): sigma_min from 0.3 to 2, gaps from wide to narrow (a narrow gap
#: leaves the late fit a larger slope bias, which the tolerance carries).
_STRESS_SPECTRA = ([1.0, 2.0, 2.2, 2.4, 2.6, 2.8], [1.6, 3.2, 3.5, 3.8, 4.1, 4.4],
                   [0.5, 1.0, 1.1, 1.2, 1.3, 1.4], [0.3, 0.6, 0.7, 0.8, 0.9, 1.0],
                   [2.0, 2.6, 2.8, 3.0, 3.2, 3.4], [1.0, 1.0, 2.0, 2.2, 2.4, 2.6])

CLAIM = register(Claim(
    id="li2.prop3",
    paper=PAPER,
    kind="proposition",
    title="eta = 0: G decays to 0 at rate sigma_min^2, mode by mode",
    source="Prop. 3, App. C.2",
    statement=r"\eta=0,\ \text{(A1), (A2)}:\ G_{\tilde F}(t)\to0,\ \|G_{\tilde F}(t)\|\le "
              r"C_0e^{-\sigma_{\min}(\tilde F)^2t};\ \text{each singular direction is a "
              r"combination of } e^{-(\sigma_i^2+\sigma_{i'}^2)t}\text{ and }e^{-\sigma_i^2t}",
    reading=r"Gradient flow of V on J(V)=\tfrac12\|\tilde Y-\tilde FV\|_F^2; G_{\tilde F}="
            r"EV^\top. 'Singular direction (i,i')' is the component u_i^\top Gw_{i'} for "
            r"\tilde F=U\Sigma W^\top (rows of G outside col(\tilde F) vanish). C_0 is not "
            r"given: the one checked is \sigma_{\max}\|V_0-V^\star\|_F(\|V^\star\|_2+"
            r"\|V_0-V^\star\|_2), from the solution; the rate is also fitted late and "
            r"compared with \sigma_{\min}^2 = \lambda_{\min}(A).",
    parameters={
        "quick": {"symbolic_size": {"K": 2, "M": 2, "extra": 1},
                  "flow": {"n": 24, "K": 6, "singular_values": [1.0, 2.0, 2.2, 2.4, 2.6, 2.8],
                           **_FLOW},
                  "rate_cases": [_RATE_CASE],
                  "spectrum_figure": {"n": 64, "Ks": [4, 8, 16, 32, 48, 63], "seeds": 4}},
        "full": {"symbolic_size": {"K": 3, "M": 2, "extra": 1},
                 "flow": {"n": 256, "K": 64,
                          "singular_values": [1.0, *np.linspace(2.0, 4.0, 63).tolist()],
                          **_FLOW, "M": 8, "inits": 8},
                 "rate_cases": [{"name": "sigma_min=1.6", "singular_values": [
                     1.6, *np.linspace(3.2, 6.4, 63).tolist()]}],
                 "spectrum_figure": {"n": 256, "Ks": [8, 16, 32, 64, 128, 192, 255],
                                     "seeds": 8}},
    },
    stated={"mode_rates": stated_mode_rates, "decay_rate": stated_decay_rate},
    check=check,
    control=NegativeControl("single-mode rate sigma_{i'}^2 in place of sigma_i^2",
                            {"mode_rates": swapped_mode_rates}),
    assumptions=(
        Assumption("K <= n - 1 and M - 1 <= K", "(A1) and (A2) can hold together",
                   lambda p: p["flow"]["M"] - 1 <= p["flow"]["K"] <= p["flow"]["n"] - 1),
        Assumption("eta = 0", "no weight decay (the flow is run with eta = 0)", lambda p: True),
    ),
    # The main flow's spectrum, samples n (K = 6 <= n - 1 throughout: a K-value spectrum
    # needs it), classes M (M >= 8 is outside (A2): the features are then not realisable)
    # and the initial scale alpha (the proposition holds for any V0).
    space={"flow.singular_values": Choice(_STRESS_SPECTRA), "flow.n": IntRange(7, 40),
           "flow.M": IntRange(2, 9), "flow.alpha": LogUniform(1e-3, 1.0), "seed": SEED},
    bounds={"flow.step_safety": STEP_SAFETY},
))
