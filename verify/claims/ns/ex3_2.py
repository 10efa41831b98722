r"""ns.ex3.2: Example 3.2, the reparameterisation :math:`x = m \odot w` under gradient flow
as a mirror flow with the hyperbolic-entropy potential, and its implicit bias.

Routes: Azulay et al. 2021's closed forms, which the example most plausibly illustrates
(stated: :math:`\nabla^2R`, :math:`\nabla R`, :math:`R`); sympy's metric of the flow on
:math:`m \odot w` at q = 2 from the parameter flow, its integrals, and the q = 2 value of the
hypergeometric :math:`\nabla R` for general q (derived); RK4 gradient flow on :math:`(m, w)`
against the mirror flow with the stated Hessian on a step-halving ladder, and the flow's limit
against :math:`\arg\min_{Ax=y}D_R(x, x_0)` from a KKT solve (measured).
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import sympy as sp
import torch

from numerics.errors import Diverged
from numerics.integrators import integrate
from numerics.ns.decayed_limits import product_tangent
from numerics.ns.steepest_flows import (
    MirrorFlow,
    ProductFlow,
    bregman_projection,
    default_regression,
    factors_from_balance,
)
from theory.ns.reparam_balance import Q, derive_metric_two_factors
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    flow_limits,
    ladder,
    ladder_compare,
    ladder_tolerance,
    limit_evidence,
    register,
    symbolic_identity,
    undecided,
    unit_roundoff,
)
from verify.arrays import asinh, sqrt
from verify.claims.ns import PAPER


def stated_hessian(x, delta):
    r"""Azulay et al. 2021: :math:`\nabla^2R(x) = (4x^2 + \delta^2)^{-1/2}`,
    :math:`\delta = w_0^2 - m_0^2`."""
    return 1 / sqrt(4 * x**2 + delta**2)


def stated_gradient(x, delta):
    r""":math:`\nabla R(x) = \tfrac12\operatorname{arcsinh}(2x/\delta)` (the constant
    :math:`c = 0`; :math:`D_R` only needs differences)."""
    return asinh(2 * x / delta) / 2


def stated_potential(x, delta):
    r""":math:`R(x) = \tfrac14[2x\operatorname{arcsinh}(2x/\delta) - \sqrt{4x^2+\delta^2}]`."""
    return (2 * x * asinh(2 * x / delta) - sqrt(4 * x**2 + delta**2)) / 4


def quartic_hessian(x, delta):
    r"""Planted error: exponent -1/4 in place of -1/2 in the Hessian."""
    return 1 / sqrt(sqrt(4 * x**2 + delta**2))


# --- symbolic ---------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    two = run.derivation(derive_metric_two_factors()).result
    x, lam = two.x, two.lam
    yield symbolic_identity("Hessian of R: Azulay et al. vs 1/M of the flow on m * w (q = 2)",
                            stated=run.stated["hessian"](x, lam),
                            derived=two.hessian.subs(Q, 2))
    yield symbolic_identity("grad R: arcsinh form vs int_0^x dz/M(z) (q = 2)",
                            stated=run.stated["gradient"](x, lam), derived=two.gradient_q2)
    yield symbolic_identity("grad R: arcsinh form vs the general-q hypergeometric integral "
                            "at q = 2", stated=run.stated["gradient"](x, lam),
                            derived=sp.simplify(sp.hyperexpand(two.gradient.subs(Q, 2))))
    zero = sp.Integer(0)
    yield symbolic_identity("R (up to its value at 0) vs int_0^x grad R (q = 2)",
                            stated=run.stated["potential"](x, lam)
                            - run.stated["potential"](zero, lam),
                            derived=two.potential_q2 - two.potential_q2.subs(x, 0))


# --- flows ------------------------------------------------------------------------------------

def _balanced(delta: torch.Tensor, d: int, scale: float, gen: torch.Generator, run: Run
              ) -> torch.Tensor:
    r"""(m, w) with :math:`w^2 - m^2 = \delta`, :math:`m^2` uniform in [0, scale], random
    signs; ``delta`` is ``(B, 1)``."""
    B = delta.shape[0]
    base = (scale * torch.rand(B, d, generator=gen, dtype=torch.float64)).to(run.device,
                                                                             run.dtype)
    offsets = torch.zeros(2, B, d, dtype=run.dtype, device=run.device)
    offsets[1] = delta
    signs = torch.sign(torch.randn(2, B, d, generator=gen, dtype=torch.float64)).to(
        run.device, run.dtype)
    two = torch.full((B, 1), 2.0, dtype=run.dtype, device=run.device)
    return factors_from_balance(base, offsets, signs, two, torch.ones(2, B, 1,
                                                                      dtype=run.dtype,
                                                                      device=run.device))


def _trajectory(run: Run) -> Iterator[Evidence]:
    p = run.params["trajectory"]
    problem, _ = default_regression(run.generator("problem"), device=run.device,
                                    dtype=run.dtype)
    d = problem.A.shape[1]
    delta = torch.tensor([[v] for v in p["delta"] for _ in range(p["inits"])],
                         dtype=run.dtype, device=run.device)
    W0 = _balanced(delta, d, p["init_scale"], run.generator("trajectory"), run)
    # q = 2 as a Python number: odd_power's fast path, the same bits as the tensor form
    two = 2.0
    mask = torch.ones(2, delta.shape[0], 1, dtype=run.dtype, device=run.device)
    gf = ProductFlow(problem.grad, two, mask)
    x_gf = run.memo("trajectory", lambda: ladder(
        lambda n, every: integrate(gf, W0, dt=p["T"] / n, steps=n, record_every=every,
                                   observe=lambda t, W: W.prod(0)).values,
        p["steps"], p["levels"]))
    hessian = run.stated["hessian"]
    mirror = MirrorFlow(problem.grad, two, lambda x: 1 / hessian(x, delta))
    x_mf = ladder(lambda n, every: integrate(mirror, W0.prod(0), dt=p["T"] / n, steps=n,
                                             record_every=every).values,
                  p["steps"], p["levels"])
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    scale = float(x_gf[-1].abs().max())
    t_gf = ladder_tolerance(x_gf, dtype=run.dtype, steps=finest, scale=scale, what="GF")
    t_mf = ladder_tolerance(x_mf, dtype=run.dtype, steps=finest, scale=scale, what="mirror")
    run.figure("max |x_GF - x_mirror| at dt, dt/2, dt/4",
               [float((a - b).abs().max()) for a, b in zip(x_gf, x_mf)])
    tolerance = Tolerance(t_gf.value + t_mf.value, f"({t_gf.why}) + ({t_mf.why})")
    yield ladder_compare("x(t): gradient flow on (m, w) vs the mirror flow with the stated "
                         "Hessian (random signs, regression)", stated=x_mf[-1],
                         measured=x_gf[-1], tolerance=tolerance,
                         parameters={"delta": p["delta"], "inits": p["inits"], "T": p["T"],
                                     "dt": p["T"] / finest})


def _implicit_bias(run: Run) -> Iterator[Evidence]:
    p = run.params["bias"]
    problem, _ = default_regression(run.generator("problem"), device=run.device,
                                    dtype=run.dtype)
    A, y = problem.A, problem.y
    N, d = A.shape
    curvature = float(torch.linalg.matrix_norm(A, ord=2)) ** 2 / N
    n = p["inits"]
    deltas = [torch.full((n, 1), v, dtype=run.dtype, device=run.device) for v in p["delta"]]
    W0s = [_balanced(delta, d, p["init_scale"], run.generator(f"bias {v}"), run)
           for v, delta in zip(p["delta"], deltas)]
    # q = 2 as a Python number: odd_power's fast path, the same bits as the tensor form
    gf = ProductFlow(problem.grad, 2.0, torch.ones(2, 1, 1, dtype=run.dtype, device=run.device))
    # RK4 is stable for dt * lambda_max < 2.78; lambda_max <= curvature * M with
    # M = sqrt(delta^2 + 4 x^2) along the path (|x| bounded by p["x_bound"]).
    steps = [p["safety"] / (curvature * math.sqrt(v**2 + 4 * p["x_bound"] ** 2))
             for v in p["delta"]]
    # One batch for every delta (each run stops on its own): the same limits as one run each.
    limits = run.memo("bias", lambda: flow_limits(
        gf, torch.cat(W0s, dim=1), lambda W: W.prod(0), dt=steps, sizes=[n] * len(steps),
        chunk=p["chunk"],
        # At rest: the speed of x within speed_tol_u units of roundoff (500 u = 1.1e-13 in
        # float64), below which the dt/2 run and the solve decide the budget.
        tol=p["speed_tol_u"] * unit_roundoff(run.dtype), max_steps=p["max_steps"],
        tangent=product_tangent))
    for delta_value, delta, W0, limit in zip(p["delta"], deltas, W0s, limits):
        x0 = W0.prod(0)
        grad, hess = run.stated["gradient"], run.stated["hessian"]
        quantity = f"limit of gradient flow vs argmin_(Ax=y) D_R(x, x0), delta = {delta_value}"
        try:
            target, condition = bregman_projection(
                lambda x: grad(x, delta) - grad(x0, delta), lambda x: hess(x, delta), A, y, x0)
        except Diverged as exc:
            # No minimiser to compare with decides nothing at this delta; raising would
            # discard the other routes' evidence too (a stated Hessian that is not the
            # derivative of the stated gradient leaves Newton without a descent direction).
            yield undecided(Route.NUMERIC, quantity, f"no minimiser to compare with: {exc}",
                            tolerance=Tolerance(0.0, "not compared"),
                            parameters={"delta": delta_value})
            continue
        yield limit_evidence(quantity, target, limit, float(condition.max()), run.dtype,
                             {"delta": delta_value, "inits": p["inits"]})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _trajectory(run)
    yield from _implicit_bias(run)


CLAIM = register(Claim(
    id="ns.ex3.2",
    paper=PAPER,
    kind="remark",
    title="Example 3.2: x = m * w under gradient flow is a hyperbolic-entropy mirror flow",
    source="Example 3.2 (submitted numbering); known answer Azulay et al. 2021 (SOURCES "
           "§5.2)",
    statement=r"\text{(public description)}\ x=m\odot w\ \text{(a depth-2 diagonal network) as "
              r"the example of a reparameterisation whose gradient flow is a mirror flow.}",
    reading=r"Toolkit's reading (the example's text was not available; it sits in the "
            r"background on mirror flows, so it is read as the known gradient-flow result): "
            r"for q=2 and (m,w) with w^2-m^2=\delta\mathbb 1, \delta>0, x=m\odot w follows "
            r"d\nabla R(x)=-\nabla f(x)dt with the separable hyperbolic entropy "
            r"\nabla^2R=(4x^2+\delta^2)^{-1/2}, \nabla R=\tfrac12\operatorname{arcsinh}"
            r"(2x/\delta)+c, R=\tfrac14[2x\operatorname{arcsinh}(2x/\delta)-\sqrt{4x^2+"
            r"\delta^2}]+cx, and on underdetermined least squares x_t\to\arg\min_{Ax=y}"
            r"D_R(x,x_0). Review 1's remark holds: m\odot w is the depth-2 case (L=2) of "
            r"ns.thm4.6. \delta<0 is the same with m and w swapped; \delta=0 makes x=0 a "
            r"stationary point and R undefined there.",
    parameters={
        "quick": {
            "trajectory": {"delta": [0.1, 1.0, 10.0], "inits": 2, "init_scale": 0.5,
                           "T": 10.0, "steps": 50, "levels": 3},
            "bias": {"delta": [1.0, 10.0], "inits": 2, "init_scale": 0.3, "x_bound": 2.0,
                     "safety": 1.0, "chunk": 100, "speed_tol_u": 500, "max_steps": 20000},
        },
        "full": {
            "trajectory": {"delta": [1e-4, 1e-2, 1.0, 100.0], "inits": 8, "init_scale": 0.5,
                           "T": 50.0, "steps": 500, "levels": 4},
            "bias": {"delta": [0.1, 0.3, 1.0, 3.0, 10.0, 100.0], "inits": 4,
                     "init_scale": 0.3, "x_bound": 2.0, "safety": 1.0, "chunk": 100,
                     "speed_tol_u": 500, "max_steps": 200000},
        },
    },
    stated={"hessian": stated_hessian, "gradient": stated_gradient,
            "potential": stated_potential},
    check=check,
    control=NegativeControl("Hessian exponent -1/4 in place of -1/2",
                            {"hessian": quartic_hessian}),
    assumptions=(Assumption("balance", "delta > 0 (w^2 - m^2 = delta 1; delta < 0 swaps m and "
                            "w, delta = 0 leaves R undefined at x = 0)",
                            lambda p: all(v > 0 for v in (*p["trajectory"]["delta"],
                                                          *p["bias"]["delta"]))),),
    # delta stays > 0 (the initialisation is built from w^2 - m^2 = delta >= 0) and within
    # what the fixed steps resolve: the trajectory's RK4 at dt = 0.2 diverges at delta = 100;
    # the run to rest takes ~1/delta longer (8 s at bias delta = 0.1)
    space={"trajectory.delta": Choice(((1e-3,), (0.1,), (1.0,), (10.0,), (30.0,),
                                       (0.1, 1.0, 10.0))),
           "trajectory.init_scale": LogUniform(0.1, 1.0),
           "bias.delta": Choice(((0.3,), (1.0,), (3.0,), (10.0,), (1.0, 10.0))),
           "bias.init_scale": LogUniform(0.1, 1.0),
           "seed": SEED},
))
