r"""ns.lemma4.4: the balance equation of the steepest flow on :math:`x = \prod_{i=1}^L w_i`
(Lemma 4.4, submitted numbering).

Routes: the toolkit's reading of the lemma (stated: the conserved power and the decay factor);
sympy's derivation from the parameter flow over every sign pattern, L = 2..5 (derived;
L = 2, 3 at quick fidelity, where the flow routes still cover L = 2..5); RK4 integration of
the flow on the default regression problem (verify/claims/ns/SOURCES.md §4.0) with random-sign
initialisations (zero crossings included), under no, decoupled and coupled weight decay, on a
step-halving ladder (measured); the measured convergence order on smooth cases; and discrete
sign descent / AdamW with beta1 = beta2 = 0, eps = 0 step by step.
"""
from __future__ import annotations

from collections.abc import Iterator

import sympy as sp
import torch

from numerics.integrators import integrate
from numerics.ns.steepest_flows import (
    ProductFlow,
    SeparableQuadratic,
    default_regression,
    factors_from_balance,
    steepest_descent,
)
from numerics.step_studies import sign_changes
from theory.ns.reparam_balance import (
    A_INT,
    ALPHA,
    GAMMA,
    Q,
    balance_rate,
    derive_balance_exponent,
    derive_coupled_balance,
    derive_decoupled_balance,
    magnitudes,
    product_flow,
)
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    ladder,
    ladder_compare,
    ladder_tolerance,
    level_errors,
    order_evidence,
    register,
    roundoff_floors,
    symbolic_identity,
    unit_roundoff,
)
from verify.arrays import exp
from verify.claims.ns import PAPER
from verify.claims.ns._ladders import (
    decay_integral,
    gradient_assumption,
    Grid,
    grid,
    MODES,
    regression_ladder,
)
from verify.claims.ns._scope import depth_scope, exponent_scope


def stated_power(q):
    r"""The power :math:`r` with :math:`|w_i|^r - |w_j|^r` constant (the toolkit's reading:
    the update exponent :math:`q`)."""
    return q


def stated_decay(q, A):
    r""":math:`D(t)/D(0) = e^{-qA}`, :math:`A = \int_0^t\alpha_s\,ds`, under decoupled decay."""
    return exp(-q * A)


def dual_power(q):
    r"""Planted alternative: the power :math:`p = q/(q-1)` the name ":math:`L_p`" suggests."""
    return q / (q - 1)


def _balances(W: torch.Tensor, r: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    r""":math:`|w_i|^r - |w_1|^r` for :math:`i \ge 2` (0 for masked factors); ``W`` is
    ``(R, L_max, B, d)``, ``r`` ``(B, 1)``."""
    powers = W.abs() ** r
    return (powers[:, 1:] - powers[:, :1]) * mask[1:]


# --- symbolic ---------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    power, decay = run.stated["power"], run.stated["decay"]
    for L in run.params["symbolic_depths"]:
        d = run.derivation(derive_balance_exponent(L))
        yield symbolic_identity(f"conserved power r(q) of |w_i|^r - |w_j|^r, L = {L}",
                                stated=power(Q), derived=d.result.r,
                                parameters={"L": L, "sign_patterns": d.result.patterns})
    for L in run.params["symbolic_depths"]:
        d = run.derivation(derive_decoupled_balance(L))
        yield symbolic_identity(f"D(t)/D(0) under decoupled decay, L = {L}",
                                stated=decay(Q, A_INT), derived=d.result, parameters={"L": L})
    d = run.derivation(derive_coupled_balance())
    rate, at_two, slope = d.result
    a1, a2 = magnitudes(2)
    D = a1**2 - a2**2
    # The rate the stated factor implies: d/dt D = (d log factor / dA) alpha D at q = 2.
    implied = sp.diff(decay(sp.Integer(2), A_INT), A_INT) / decay(sp.Integer(2), A_INT) \
        * ALPHA * D
    yield symbolic_identity("coupled decay at q = 2: dD/dt (coupled = decoupled flow)",
                            stated=sp.simplify(implied), derived=at_two,
                            parameters={"L": 2})
    run.figure("coupled decay, q = 3/2: d(dD/dt)/d|g| at |g| = alpha = a_1 = 1, a_2 = 2 "
               "(nonzero: D(t) depends on the loss, no closed form in t)", float(slope))
    flow = product_flow(2, (1, 1), 1)
    witness = {Q: sp.Rational(3, 2), GAMMA: 1, a1: 1, a2: 2}
    run.figure("L_p reading (power p = 3 at q = 3/2, L = 2, w = (1, 2), g = 1): "
               "d/dt(|w_1|^p - |w_2|^p)",
               float(balance_rate(flow, 0, 1, dual_power(Q)).subs(witness)))


# --- the flow on the regression problem -------------------------------------------------------

def _flow_grid(run: Run) -> Grid:
    p = run.params["flow"]
    return grid({"mode": MODES, "q": p["q"], "L": p["L"], "init": range(p["inits"])},
                L_max=max(p["L"]), dtype=run.dtype, device=run.device)


def _random_initial(run: Run, G: Grid, scale: float, stream: str):
    def initial(d: int) -> torch.Tensor:
        W0 = scale * torch.randn(G.mask.shape[0], G.size, d, generator=run.generator(stream),
                                 dtype=torch.float64).to(run.device, run.dtype)
        return torch.where(G.mask > 0, W0, torch.ones_like(W0))
    return initial


def _flow(run: Run) -> Iterator[Evidence]:
    p = run.params["flow"]
    G = _flow_grid(run)
    problem, times, values = regression_ladder(
        run, "flow", G, _random_initial(run, G, p["init_scale"], "flow"), p)
    verdicted = [b for b, lab in enumerate(G.labels) if lab["q"] > 1]
    if verdicted:  # a grid of q = 1 alone is reported, not verdicted (below)
        gradient_assumption(run, problem, values[-1][:, :, verdicted], p["gradient_floor"])
    A = p["alpha"] * decay_integral(times)[:, None, None, None]
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    crossings, deviations = {}, {}
    for q in p["q"]:
        if q == 1:
            _filippov_figure(run, G, values, A)
            continue
        r = torch.full((1, 1), float(run.stated["power"](q)), dtype=run.dtype,
                       device=run.device)
        for mode in MODES:
            idx = G.where(q=q, mode=mode)
            mask = G.mask[:, idx]
            Ds = [_balances(v[:, :, idx], r, mask) for v in values]
            scale = float(Ds[-1].abs().max())
            tol = ladder_tolerance(Ds, dtype=run.dtype, steps=finest, scale=scale,
                                   what="RK4 ladder of D(t)")
            crossings[f"q={q}, {mode}"] = int(sign_changes(values[-1][:, :, idx]).sum())
            params = {"q": q, "L": p["L"], "decay": mode, "alpha0": p["alpha"],
                      "alpha_t": "alpha0 (1 + sin(2t)/2)", "T": p["T"],
                      "dt": p["T"] / finest, "inits": p["inits"]}
            if mode == "coupled" and q != 2:
                # Derived: sign(dD/dt) = -sign(D) (psi_q increasing), so |D| never grows.
                growth = (Ds[-1].abs()[1:] - Ds[-1].abs()[:-1]).clamp_min(0).amax()
                yield compare(Route.NUMERIC, f"coupled decay, q = {q}: largest increase of "
                              f"|D| between records (|D| non-increasing)",
                              derived=torch.zeros(()), measured=growth, metric="absolute",
                              tolerance=Tolerance(2 * tol.value, "difference of two records, "
                                                  "each within: " + tol.why),
                              parameters=params)
                stated = Ds[-1][:1] * run.stated["decay"](q, A)
                run.figure(f"coupled decay, q = {q}: max |D(t) - D(0) e^(-qA)| "
                           f"(not exponential)", float((Ds[-1] - stated).abs().max()))
                continue
            rate = 0.0 if mode == "none" else q
            stated = Ds[-1][:1] * run.stated["decay"](rate, A)
            label = {"none": "no decay: D(t) = D(0)",
                     "decoupled": "decoupled decay: D(t) = D(0) e^(-qA(t))",
                     "coupled": "coupled decay at q = 2: D(t) = D(0) e^(-2A(t))"}[mode]
            yield ladder_compare(f"{label}, q = {q}, L = {p['L']}",
                                 stated=stated.expand_as(Ds[-1]), measured=Ds[-1],
                                 tolerance=tol, parameters=params)
            deviations[f"q={q}, {mode}"] = level_errors(
                Ds, lambda D: D[:1] * run.stated["decay"](rate, A), (0, 1, 2, 3)).tolist()
    run.figure("factor zero crossings on the finest level (regression runs)", crossings)
    run.figure("max deviation of D at dt, dt/2, dt/4 (regression runs)", deviations)
    for q in p["q"]:
        if q in (1, 2):  # p = q/(q-1) is q itself at 2 and infinite at 1
            continue
        idx = G.where(q=q, mode="none")
        Dp = _balances(values[-1][:, :, idx], torch.full((1, 1), dual_power(q)), G.mask[:, idx])
        run.figure(f"L_p reading, q = {q}: max_t |D_p(t) - D_p(0)| with p = q/(q-1)",
                   float((Dp - Dp[:1]).abs().max()))


def _filippov_figure(run: Run, G: Grid, values: list[torch.Tensor], A: torch.Tensor) -> None:
    r"""q = 1 on the regression, reported, not verdicted. The lemma holds there for classical
    solutions (sign(0) = 0); a fixed-step scheme follows the Filippov solution, which slides
    where a factor and its gradient coordinate vanish together and moves D there (the
    sliding example), so the ladder's deviation does not shrink with the step (quick, seed
    0: observed order 0.01, tolerance 1.6 against D ~ 1.6: NaN before). The q = 1 identity
    is verdicted step by step by the sign-descent route, on steps without a zero crossing.
    The derived power and rate at q = 1 are used (the stated ones may not exist there: p =
    q/(q-1))."""
    power, rate = _derived_at_sign()
    r = torch.full((1, 1), float(power), dtype=run.dtype, device=run.device)
    deviations = {}
    for mode in ("none", "decoupled"):
        idx = G.where(q=1.0, mode=mode)
        factor = torch.exp(float(rate) * A) if mode == "decoupled" else torch.ones_like(A)
        deviations[mode] = level_errors(
            [_balances(v[:, :, idx], r, G.mask[:, idx]) for v in values],
            lambda D: D[:1] * factor, (0, 1, 2, 3)).tolist()
    run.figure("q = 1 regression: max |D(t) - D(0) e^(-A)| at dt, dt/2, dt/4 (Filippov "
               "sliding, no order; verdicted by sign descent off zero crossings)", deviations)


def _derived_at_sign() -> tuple[sp.Expr, sp.Expr]:
    """The derived conserved power r(1) and decoupled rate d log(D(t)/D(0)) / dA at q = 1
    (sign descent): 1 and -1."""
    power = derive_balance_exponent(2).result.r.subs(Q, 1)
    rate = sp.diff(sp.log(derive_decoupled_balance(2).result), A_INT).subs(Q, 1)
    return power, rate

# --- smooth cases: the measured order ---------------------------------------------------------

def _smooth(run: Run) -> Iterator[Evidence]:
    p = run.params["smooth"]
    G = grid({"mode": ("none", "decoupled"), "q": p["q"], "L": p["L"]},
             L_max=max(p["L"]), dtype=run.dtype, device=run.device)
    gen = run.generator("smooth")
    d = p["d"]

    def uniform(*shape: int, lo: float, hi: float) -> torch.Tensor:
        u = torch.rand(*shape, generator=gen, dtype=torch.float64)
        return (lo + (hi - lo) * u).to(run.device, run.dtype)

    base = uniform(G.size, d, lo=0.3, hi=0.8)
    offsets = uniform(G.mask.shape[0], G.size, d, lo=0.0, hi=0.5) * G.mask
    offsets[0] = 0
    W0 = factors_from_balance(base, offsets, torch.ones_like(offsets), G.q, G.mask)
    x0 = W0.prod(0)
    # Positive factors and g = h (x - c) < 0 with c beyond x: x grows toward c, no factor or
    # gradient coordinate crosses zero within T (checked below), so the field is smooth.
    problem = SeparableQuadratic(torch.ones_like(x0), x0 + p["gap"])
    decay = torch.tensor([[p["alpha"] if lab["mode"] == "decoupled" else 0.0]
                          for lab in G.labels], dtype=run.dtype, device=run.device)
    flow = ProductFlow(problem.grad, G.q, G.mask, decoupled=decay)
    # the stated forms do not enter the flow: the control's run reuses the ladder
    values = run.memo("smooth ladder", lambda: ladder(
        lambda n, every: integrate(flow, W0, dt=p["T"] / n, steps=n,
                                   record_every=every).values, p["steps"], p["levels"]))
    times = torch.linspace(0, p["T"], values[0].shape[0], dtype=run.dtype, device=run.device)
    A = times[:, None, None, None] * p["alpha"]
    r = run.stated["power"](G.q)
    rate = G.q * (decay > 0)
    errors = level_errors([_balances(v, r, G.mask) for v in values],
                          lambda D: D[:1] * run.stated["decay"](rate, A), (0, 1, 3))
    x_end = values[-1].prod(1)
    smooth = bool((sign_changes(values[-1]) == 0).all()) and bool(
        (problem.grad(x_end) < 0).all())
    run.assume("smooth cases stay smooth", smooth,
               "no factor and no gradient coordinate changes sign within T",
               f"smallest |x - c| at T: {float((x_end - problem.c).abs().min()):.3g} "
               f"(gap at t = 0: {p['gap']})")
    floors = roundoff_floors(run.dtype, p["steps"], p["levels"],
                             float(W0.abs().max()) ** float(G.q.max()))
    yield order_evidence("RK4 order of the balance deviation, smooth cases (q in (1, 2], "
                         "L = 2..5, no and decoupled decay)", errors, nominal_order=4,
                         floors=floors, parameters={"q": p["q"], "L": p["L"], "T": p["T"],
                                                  "steps": [p["steps"] * 2**k for k in
                                                            range(p["levels"])]})


# --- discrete sign descent --------------------------------------------------------------------

def _sign_descent(run: Run) -> Iterator[Evidence]:
    p = run.params["sign_descent"]
    # dD/dt / (alpha D) = d log(D(t)/D(0)) / dA from the derived factor, at q = 1: -1.
    r, decoupled_rate = _derived_at_sign()
    G = grid({"mode": ("none", "decoupled"), "q": (1.0,), "L": p["L"], "init": range(p["inits"])},
             L_max=max(p["L"]), dtype=run.dtype, device=run.device)
    problem, _ = default_regression(run.generator("problem"), device=run.device,
                                    dtype=run.dtype)
    W0 = p["init_scale"] * torch.randn(G.mask.shape[0], G.size, problem.A.shape[1],
                                       generator=run.generator("sign descent"),
                                       dtype=torch.float64).to(run.device, run.dtype)
    W0 = torch.where(G.mask > 0, W0, torch.ones_like(W0))
    alpha = torch.tensor([[p["alpha"] if lab["mode"] == "decoupled" else 0.0]
                          for lab in G.labels], dtype=run.dtype, device=run.device)
    flow = ProductFlow(problem.grad, G.q, G.mask, decoupled=alpha)
    # the stated forms do not enter: the control's run reuses the iterates (K+1, L, B, d)
    W = run.memo("sign descent",
                 lambda: steepest_descent(flow, W0, lr=p["lr"], steps=p["steps"]).values)
    D = _balances(W, torch.full((1, 1), float(r)), G.mask)
    # Euler on D, linear in |w| inside an orthant: D_{k+1} = (1 + lr dD/dt / D) D_k exactly.
    factor = 1 + p["lr"] * alpha * float(decoupled_rate)
    residual = D[1:] - factor[None, None] * D[:-1]
    flips = (torch.sign(W[1:]) != torch.sign(W[:-1])).any(1, keepdim=True) & (G.mask[1:] > 0)
    quiet = ~flips.expand_as(residual)
    scale = float(W.abs().max())
    yield compare(Route.NUMERIC, "sign descent / AdamW (beta = 0, eps = 0): D_{k+1} - "
                  "(1 - lr alpha) D_k on steps without a zero crossing",
                  derived=torch.zeros(()), measured=residual[quiet].abs().max(),
                  metric="absolute",
                  tolerance=Tolerance(8 * unit_roundoff(run.dtype) * scale,
                                      "one rounding of each |w| per step: 8 u max|w|"),
                  parameters={"lr": p["lr"], "steps": p["steps"], "alpha": p["alpha"],
                              "L": p["L"], "power r(1)": str(r)})
    _sliding_example(run)
    jumps = residual[~quiet].abs()
    run.figure("sign descent: fraction of (step, coordinate) pairs with a zero crossing",
               float((~quiet).float().mean()))
    run.figure("sign descent: largest |D_{k+1} - (1 - lr alpha) D_k| / lr at a crossing "
               "(|w| bends at 0: at most 2)",
               float(jumps.max() / p["lr"]) if jumps.numel() else 0.0)


def _sliding_example(run: Run) -> None:
    r"""q = 1 on the switching surface: n = 1, L = 2, f(x) = x^2/2, w(0) = (0.1, 1). The
    classical solution (sign(0) = 0) stops at w = (0, 0.9) at t = 0.1, D = 0.9 kept. Both
    one-sided fields give dw_2/dt = -1 there, so the Filippov solution slides with w_1 = 0 and
    |w_2| falling: sign descent and RK4 follow it and D collapses."""
    W0 = torch.tensor([[[0.1]], [[1.0]]], dtype=run.dtype, device=run.device)
    one = torch.ones(1, 1, dtype=run.dtype, device=run.device)
    flow = ProductFlow(lambda x: x, one, torch.ones(2, 1, 1, dtype=run.dtype,
                                                    device=run.device))
    lr = 1e-3
    # fixed data, no stated form: the control's run reuses it
    descent, rk4 = run.memo("sliding", lambda: (
        steepest_descent(flow, W0, lr=lr, steps=1000, record_every=1000).final,
        integrate(flow, W0, dt=lr, steps=1000, record_every=1000).final))
    run.figure("q = 1 sliding counterexample (n = 1, L = 2, f = x^2/2, w(0) = (0.1, 1)): "
               "D = |w_2| - |w_1| at t = 1; classical solution 0.9",
               {"sign descent lr=1e-3": float(descent[1].abs().sum() - descent[0].abs().sum()),
                "RK4 dt=1e-3": float(rk4[1].abs().sum() - rk4[0].abs().sum())})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _flow(run)
    yield from _smooth(run)
    yield from _sign_descent(run)


CLAIM = register(Claim(
    id="ns.lemma4.4",
    paper=PAPER,
    kind="lemma",
    title="Balance equation of the steepest flow on deep diagonal reparameterisations",
    source="Lemma 4.4 (submitted numbering)",
    statement=r"\text{(public description)}\ x=\prod_{i=1}^L w_i,\ "
              r"dw_i=-\operatorname{sign}(\partial_{w_i}F)|\partial_{w_i}F|^{q-1}dt"
              r"\ (-\alpha_t w_i\,dt):\ \text{a coordinate-wise difference of powers of }"
              r"|w_i|,|w_j|\text{ is constant a.e.; with decoupled weight decay it is "
              r"multiplied by an exponential factor in }\int_0^t\alpha_s ds.",
    reading=r"Toolkit's reading (the paper's formula was not available and is not used): for "
            r"every coordinate and every pair i, j, D_{ij}=|w_i|^{r}-|w_j|^{r} with "
            r"r=q (the update exponent, not the dual p=q/(q-1) that the name L_p suggests) "
            r"satisfies D(t)=D(0) without decay and D(t)=D(0)e^{-q\int_0^t\alpha_s ds} "
            r"under decoupled decay, for q\in[1,2], L\ge2, on every sign pattern. 'Almost "
            r"everywhere' is read in time: the identity uses d|w|/dt=sign(w)\dot w, which "
            r"fails only at the instants a factor crosses 0 (D stays continuous there). "
            r"Coupled decay is not covered by the exponential form: there dD/dt=-q[\psi_q("
            r"gx+\alpha w_i^2)-\psi_q(gx+\alpha w_j^2)], \psi_q(v)=sign(v)|v|^{q-1}, which "
            r"depends on the loss unless q=2; |D| is still non-increasing (checked). "
            r"Finding: with the power p the lemma would be false for every q<2 (e.g. q=3/2, "
            r"L=2, w=(1,2), g=1: d/dt(|w_1|^3-|w_2|^3)=3\sqrt2(2\sqrt2-1)\ne0). Discrete "
            r"sign descent (AdamW, beta=0, eps=0) keeps |w_i|-|w_j| exactly, times "
            r"(1-lr\,\alpha) per step with decoupled decay, except at steps where a factor "
            r"crosses 0. Needs a convention at q=1: the identity holds for classical "
            r"solutions (sign(0)=0), not for Filippov solutions, which slide on "
            r"{w_1=0, g=0} with |w_i| still moving. Smallest case: n=1, L=2, f=x^2/2, "
            r"w(0)=(0.1,1): the classical solution stops at (0,0.9) at t=0.1 (D=0.9 kept); "
            r"sign descent and RK4 follow the Filippov solution and reach D~0 at t=1.",
    parameters={
        "quick": {
            "symbolic_depths": [2, 3],
            "flow": {"q": [1.25, 1.5, 1.75, 2.0], "L": [2, 3, 4, 5], "inits": 2,
                     "init_scale": 0.7, "alpha": 0.1, "T": 2.0, "steps": 50, "levels": 3,
                     "gradient_floor": 1e-6},
            "smooth": {"q": [1.25, 1.5, 1.75, 2.0], "L": [2, 3, 4, 5], "d": 4, "gap": 2.0,
                       "alpha": 0.5, "T": 0.1, "steps": 4, "levels": 4},
            "sign_descent": {"L": [2, 3, 5], "inits": 2, "init_scale": 0.5, "lr": 0.01,
                             "steps": 300, "alpha": 0.1},
        },
        "full": {
            "symbolic_depths": [2, 3, 4, 5],
            "flow": {"q": [1.1, 1.25, 1.5, 1.75, 1.9, 2.0], "L": [2, 3, 4, 5], "inits": 8,
                     "init_scale": 0.7, "alpha": 0.05, "T": 2.0, "steps": 100, "levels": 4,
                     "gradient_floor": 1e-6},
            "smooth": {"q": [1.1, 1.25, 1.5, 1.75, 1.9, 2.0], "L": [2, 3, 4, 5], "d": 8,
                       "gap": 2.0, "alpha": 0.5, "T": 0.1, "steps": 4, "levels": 5},
            "sign_descent": {"L": [2, 3, 4, 5], "inits": 8, "init_scale": 0.5, "lr": 0.002,
                             "steps": 5000, "alpha": 0.05},
        },
    },
    stated={"power": stated_power, "decay": stated_decay},
    check=check,
    control=NegativeControl("the L_p reading: power p = q/(q-1) in place of q",
                            {"power": dual_power}),
    assumptions=(exponent_scope("flow.q", "smooth.q"),
                 depth_scope("symbolic_depths", "flow.L", "smooth.L", "sign_descent.L")),
    space={"flow.q": Choice(((1.0,), (1.25,), (1.5,), (2.0,), (1.25, 1.75, 2.0))),
           "flow.L": Choice(((2,), (3,), (5,), (2, 3, 4, 5))),
           "flow.alpha": LogUniform(0.01, 1.0),
           "flow.init_scale": LogUniform(0.1, 2.0),
           "sign_descent.lr": LogUniform(1e-3, 0.1),
           "seed": SEED},
))
