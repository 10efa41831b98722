r"""ns.def3.3: balancedness of the two-factor reparameterisation :math:`x = m \odot w`
(Definition 3.3, submitted numbering) and its conservation under gradient flow.

Routes: the toolkit's reading of the definition (stated: :math:`w\odot w - m\odot m`); sympy's
conserved quantity of the flow at q = 2 and the time derivative of the stated quantity along
gradient flow on every sign pattern (derived); RK4 gradient flow on the regression problem
from :math:`\lambda\mathbb 1`-balanced random-sign initialisations, on a step-halving ladder,
with the measured order (measured).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterator

import sympy as sp
import torch

from numerics.integrators import integrate
from numerics.ns.steepest_flows import (
    ProductFlow,
    default_regression,
    factors_from_balance,
)
from numerics.step_studies import sign_changes
from theory.ns.reparam_balance import (
    Q,
    derive_balance_exponent,
    product_flow,
    sign_patterns,
)
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Plot,
    Reference,
    Run,
    case_orders,
    ladder,
    ladder_compare,
    ladder_tolerance,
    level_errors,
    order_evidence,
    register,
    roundoff_floors,
    symbolic_identity,
)
from verify.claims.ns import PAPER
from verify.claims.ns._ladders import grid


def stated_balance(m, w):
    r"""Def. 3.3's quantity (toolkit's reading): :math:`w\odot w - m\odot m`, coordinate-wise."""
    return w * w - m * m


def cubed_balance(m, w):
    r"""Planted error: :math:`|w|^3 - |m|^3` (a wrong exponent)."""
    return abs(w) ** 3 - abs(m) ** 3


def _symbolic(run: Run) -> Iterator[Evidence]:
    d = run.derivation(derive_balance_exponent(2))
    r = d.result.r.subs(Q, 2)
    balance = run.stated["balance"]
    m_, w_ = sp.symbols("m w", real=True)
    stated_expr = balance(m_, w_)
    values, derived, rates = [], [], []
    for signs, grad_sign in sign_patterns(2):
        flow = product_flow(2, signs, grad_sign)
        a_m, a_w = flow.a
        at = {m_: signs[0] * a_m, w_: signs[1] * a_w}
        velocity = {m_: flow.velocities[0].subs(Q, 2), w_: flow.velocities[1].subs(Q, 2)}
        if grad_sign == 1:
            values.append(stated_expr.subs(at))
            derived.append(a_w**r - a_m**r)
        rates.append(sp.expand(sum(sp.diff(stated_expr, v).subs(at) * velocity[v]
                                   for v in (m_, w_))))
    yield symbolic_identity("balance quantity vs the conserved |w|^r - |m|^r of gradient flow "
                            "(4 sign patterns of (m, w))",
                            stated=sp.Matrix(values), derived=sp.Matrix(derived),
                            parameters={"q": 2, "r": str(r)})
    yield symbolic_identity("d/dt of the balance quantity along gradient flow (8 sign "
                            "patterns of (m, w, g))",
                            stated=sp.Matrix(rates), derived=sp.zeros(len(rates), 1),
                            parameters={"q": 2})


def _initial(lam: torch.Tensor, base: torch.Tensor, signs: torch.Tensor) -> torch.Tensor:
    r"""(m, w) with :math:`w^2 - m^2 = \lambda`: :math:`m^2 = u + \max(0, -\lambda)`,
    :math:`w^2 = u + \max(0, \lambda)`."""
    offsets = torch.stack([(-lam).clamp_min(0), lam.clamp_min(0)]).expand(2, *base.shape)
    two = torch.full((base.shape[0], 1), 2.0, dtype=base.dtype, device=base.device)
    mask = torch.ones(2, base.shape[0], 1, dtype=base.dtype, device=base.device)
    return factors_from_balance(base, offsets.clone(), signs, two, mask)


def _flow(run: Run) -> Iterator[Evidence]:
    p = run.params["flow"]
    G = grid({"q": p["q"], "L": (2,), "lam": p["lam"], "init": range(p["inits"])}, L_max=2,
             dtype=run.dtype, device=run.device)
    def simulate():
        problem, _ = default_regression(run.generator("problem"), device=run.device,
                                        dtype=run.dtype)
        d = problem.A.shape[1]
        gen = run.generator("flow")
        base = (p["init_scale"] * torch.rand(G.size, d, generator=gen, dtype=torch.float64)
                ).to(run.device, run.dtype)
        signs = torch.sign(torch.randn(2, G.size, d, generator=gen, dtype=torch.float64)
                           ).to(run.device, run.dtype)
        lam = torch.tensor([[lab["lam"]] for lab in G.labels], dtype=run.dtype,
                           device=run.device)
        W0 = _initial(lam, base, signs)
        flow = ProductFlow(problem.grad, G.q, G.mask)
        return ladder(lambda n, every: integrate(flow, W0, dt=p["T"] / n, steps=n,
                                                 record_every=every).values,
                      p["steps"], p["levels"])

    values = run.memo("flow", simulate)
    lam = torch.tensor([lab["lam"] for lab in G.labels], dtype=run.dtype,
                       device=run.device)[None, :, None]
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    balance = run.stated["balance"]
    gf = G.where(q=2.0)
    Bs = [balance(v[:, 0, gf], v[:, 1, gf]) for v in values]
    target = lam[:, gf].expand_as(Bs[-1])
    tolerance = ladder_tolerance(Bs, dtype=run.dtype, steps=finest,
                                 scale=float(Bs[-1].abs().max()),
                                 what="RK4 ladder of the balance")
    yield ladder_compare("balance w^2 - m^2 along gradient flow vs lambda 1 (random signs, "
                         "regression)", stated=target, measured=Bs[-1], tolerance=tolerance,
                         parameters={"lam": p["lam"], "T": p["T"], "dt": p["T"] / finest,
                                     "inits": p["inits"]})
    errors = level_errors(Bs, lambda B: lam[:, gf].expand_as(B), (0, 2))
    scale = float(max(B.abs().max() for B in Bs))
    floors = roundoff_floors(run.dtype, p["steps"], p["levels"], scale)
    yield order_evidence("RK4 order of the balance deviation (gradient flow: a polynomial, "
                         "smooth field)", errors, nominal_order=4, floors=floors,
                         parameters={"lam": p["lam"], "T": p["T"]})
    _order_plot(run, p, errors, floors)
    run.figure("zero crossings of m or w along the finest gradient-flow runs",
               int(sign_changes(values[-1][:, :, gf]).sum()))
    for q in p["q"]:
        if q == 2:
            continue
        idx = G.where(q=q)
        B = balance(values[-1][:, 0, idx], values[-1][:, 1, idx])
        run.figure(f"q = {q}: max_t |(w^2 - m^2)(t) - lambda| (Def. 3.3's quantity is a "
                   f"gradient-flow invariant only)", float((B - lam[:, idx]).abs().max()))


def _order_plot(run: Run, p, errors: torch.Tensor, floors: torch.Tensor) -> None:
    """The step ladder a reader expects: the balance's deviation against the step size on
    log-log axes, with the fitted order (median over cases) and RK4's nominal order 4."""
    h = [p["T"] / (p["steps"] * 2**k) for k in range(p["levels"])]

    def positive(values: torch.Tensor) -> list[float]:
        return [v if v > 0 and math.isfinite(v) else math.nan for v in values.tolist()]

    orders = case_orders(errors, floors)
    fitted = None
    if orders:
        median = statistics.median(orders)
        fitted = (median, f"fitted order {median:.2f} (median of {len(orders)} cases)")
    run.plot(Plot("RK4 step ladder: max_t |(w^2 - m^2)(t) - lambda| against the step size",
                  x_label="step size h", y_label="deviation of the balance", log_x=True,
                  log_y=True, series={
                      "largest over cases": (h, positive(errors.max(-1).values)),
                      "median over cases": (h, positive(errors.median(-1).values)),
                      "roundoff floor (8 n u scale)": (h, positive(floors))},
                  styles={"roundoff floor (8 n u scale)": ":"}, fitted=fitted,
                  references=(Reference("nominal order 4 (RK4)", slope=4),)))


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _flow(run)


CLAIM = register(Claim(
    id="ns.def3.3",
    paper=PAPER,
    kind="definition",
    title="Balancedness of x = m * w (two factors) and its conservation by gradient flow",
    source="Definition 3.3 (submitted numbering)",
    statement=r"\text{(public description)}\ m\odot w\text{ is balanced: a coordinate-wise "
              r"balance quantity equals }\lambda\,\mathbb I_n.",
    reading=r"Toolkit's reading: (m,w) is \lambda-balanced iff w\odot w-m\odot m="
            r"\lambda\mathbb 1_n (\mathbb I_n read as the all-ones vector, one \lambda\in"
            r"\mathbb R for every coordinate, signs of m, w free; the opposite sign convention "
            r"m^2-w^2 only flips \lambda). Gradient flow (q=2) on f(m\odot w) keeps it, "
            r"coordinate by coordinate and on every sign pattern (zero crossings included), "
            r"which is what makes the definition useful. It is a q=2 notion: for q<2 the "
            r"conserved quantity is |w|^q-|m|^q (ns.lemma4.4) and w^2-m^2 drifts (figures).",
    parameters={
        "quick": {"flow": {"q": [1.5, 2.0], "lam": [-0.5, 0.01, 1.0], "inits": 2,
                           "init_scale": 0.5, "T": 10.0, "steps": 50, "levels": 3}},
        "full": {"flow": {"q": [1.25, 1.5, 1.75, 2.0], "lam": [-1.0, -0.01, 1e-4, 0.01, 1.0,
                                                               4.0],
                          "inits": 8, "init_scale": 0.5, "T": 20.0, "steps": 100,
                          "levels": 4}},
    },
    stated={"balance": stated_balance},
    check=check,
    control=NegativeControl("balance |w|^3 - |m|^3 (wrong exponent)", {"balance": cubed_balance}),
    # q = 2 is the definition's flow (the verdicted runs); the other q are reported figures
    space={"flow.lam": Choice(((-1.0,), (-0.01,), (1e-4,), (0.5,), (4.0,), (-0.5, 0.01, 1.0))),
           "flow.init_scale": LogUniform(0.05, 2.0),
           "flow.q": Choice(((2.0,), (1.5, 2.0), (1.25, 1.75, 2.0))),
           "seed": SEED},
))
