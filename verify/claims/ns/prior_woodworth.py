r"""ns.prior.woodworth: the known answer of Woodworth et al. 2020 ("Kernel and rich regimes in
overparametrized models", verify/claims/ns/SOURCES.md §5.1), the q = 2 case that Never Saddle's
potentials must
reduce to.

Routes: Woodworth et al.'s potential :math:`\sum_i q(\beta_i/a^2)`,
:math:`q(z) = 2 - \sqrt{4+z^2} + z\operatorname{arcsinh}(z/2)`, and their depth-D relation
:math:`w_+^{2-D} = a^{2-D} - D(D-2)\theta` (stated); sympy's metric of the gradient flow on
:math:`\beta = w_+^2 - w_-^2` and on the product :math:`x = w_1w_2` (ns.thm4.6 at L = 2, q = 2),
and the rate of :math:`w_+^{2-D}` from the depth-D flow, and that rate integrated from
:math:`w_+(0) = a` (derived); RK4 gradient flow on
:math:`(w_+, w_-)` from :math:`a\mathbb 1` to rest, against the minimiser of the stated
potential on :math:`A\beta = y` from a KKT solve, and the stated potential at the limit
against feasible points around it (measured), across the scale a.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import sympy as sp
import torch

from numerics.errors import Diverged
from numerics.ns.steepest_flows import (
    DifferenceOfPowersFlow,
    bregman_projection,
    default_regression,
    min_norm_solutions,
)
from theory.ns.reparam_balance import (
    Q,
    derive_metric_two_factors,
    derive_woodworth_depth2,
    derive_woodworth_depth_D,
)
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_least,
    flow_limits,
    limit_evidence,
    register,
    symbolic_identity,
    undecided,
    unit_roundoff,
)
from verify.arrays import asinh, sqrt
from verify.claims.ns import PAPER


def stated_q(z):
    r""":math:`q(z) = 2 - \sqrt{4 + z^2} + z\operatorname{arcsinh}(z/2)`."""
    return 2 - sqrt(4 + z**2) + z * asinh(z / 2)


def stated_scale(a):
    r"""The argument's scale: :math:`q(\beta/a^2)` for :math:`w_\pm(0) = a\mathbb 1`."""
    return a**2


def linear_scale(a):
    r"""Planted error: :math:`q(\beta/a)` (wrong exponent of the initial scale)."""
    return a


def stated_depth_D(a, D, theta):
    r""":math:`w_+^{2-D} = a^{2-D} - D(D-2)\theta`, :math:`\theta = -\int_0^tg\,ds`."""
    return a ** (2 - D) - D * (D - 2) * theta


def _symbolic(run: Run) -> Iterator[Evidence]:
    mu, kappa, beta = run.derivation(derive_woodworth_depth2()).result
    a = sp.Symbol("a", positive=True)
    mu = mu.subs(kappa, a**2)  # kappa = w_+ w_- = a^2 at w_+ = w_- = a
    potential = run.stated["q"](beta / run.stated["scale"](a))
    hessian = sp.diff(potential, beta, 2)
    normalised = hessian / hessian.subs(beta, 0)
    yield symbolic_identity("normalised Hessian q''(beta/s(a)) / q''(0) vs mu(0)/mu(beta) of "
                            "the flow on w_+^2 - w_-^2", stated=normalised,
                            derived=mu.subs(beta, 0) / mu,
                            note="the minimiser is unchanged by a positive factor")
    two = run.derivation(derive_metric_two_factors()).result
    # u = w_+ + w_-, v = w_+ - w_- gives u v = beta and u^2 - v^2 = 4 w_+ w_- = 4 a^2.
    M = two.M.subs({Q: 2, two.lam: 4 * a**2}).subs(two.x, beta)
    yield symbolic_identity("normalised Hessian vs the product metric of ns.thm4.6 (L = 2, "
                            "q = 2, offset 4 a^2)", stated=normalised,
                            derived=M.subs(beta, 0) / M)
    t, g = sp.Symbol("t"), sp.Symbol("g")
    theta = sp.Function("theta")(t)
    for D in run.params["depths"]:
        rate = run.derivation(derive_woodworth_depth_D(D)).result
        stated_rate = sp.diff(run.stated["depth_D"](a, D, theta), t).subs(theta.diff(t), -g)
        yield symbolic_identity(f"d/dt w_+^(2-D), depth D = {D}: stated relation vs the flow",
                                stated=stated_rate, derived=rate, parameters={"D": D})
        # The rate loses the constant term, so the relation's values are compared too: the
        # rate is a constant multiple of g (derived), so its time integral is that multiple
        # of int g = -theta, and w_+(0) = a fixes the constant.
        if sp.diff(rate, g, 2) != 0:
            raise ArithmeticError(f"d/dt w_+^(2-D) is not linear in g at D = {D}: {rate}")
        th = sp.Symbol("theta", real=True)
        yield symbolic_identity(f"w_+^(2-D) itself, depth D = {D}: stated relation vs "
                                f"w_+(0)^(2-D) + the integrated rate, w_+(0) = a",
                                stated=run.stated["depth_D"](a, D, th),
                                derived=a ** (2 - D) + rate.subs(g, -th), parameters={"D": D})


def _derivatives(fn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """First and second derivative of a separable ``fn`` at ``x`` by autograd."""
    x = x.detach().requires_grad_(True)
    (first,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), x)
    return first.detach(), second


def _beta_tangent(W: torch.Tensor, V: torch.Tensor, D: int) -> torch.Tensor:
    r""":math:`\dot\beta = Dw_+^{D-1}v_+ - Dw_-^{D-1}v_-` of :math:`\beta = w_+^D - w_-^D`
    along a velocity ``V`` of ``W = stack(w_+, w_-)``: the directional derivative written out
    (what forward-mode autograd of ``flow.beta`` computes, without loading torch.func)."""
    return D * (W[0] ** (D - 1) * V[0] - W[1] ** (D - 1) * V[1])


def _minimality(potential, limit: torch.Tensor, A: torch.Tensor, a: float, s: float
                ) -> Evidence:
    r"""The stated potential at the flow's limit against feasible points around it,
    :math:`\beta_\infty \pm \tau z` for an orthonormal basis :math:`z` of
    :math:`\ker A`: an argmin is a minimum, which stationarity (the KKT solve) does not see
    (it holds for -q too). :math:`\tau` is half the limit's largest entry, so the second-order
    gain :math:`\tfrac12\tau^2z^\top\nabla^2\phi z` dwarfs both roundoff and the first-order
    term left by the limit's distance to the exact minimiser."""
    null = torch.linalg.svd(A, full_matrices=True).Vh[A.shape[0]:]
    tau = 0.5 * float(limit.abs().max())
    neighbours = torch.cat([limit + tau * null, limit - tau * null])
    at_limit = potential(limit).sum(-1)
    d = limit.shape[-1]
    # q(z) = 2 - sqrt(4 + z^2) + z asinh(z/2): parts of size 4 + z^2 cancel to q ~ z^2/4
    # near 0, so each of the d terms carries about 8 u (4 + z^2) absolute error.
    z_max = float(torch.cat([neighbours, limit]).abs().max()) / s
    error = 8 * d * unit_roundoff(limit.dtype) * (4 + z_max**2) / float(at_limit.abs())
    return at_least(Route.NUMERIC, f"sum q(beta/s(a)) at feasible beta_inf +- tau z (z in "
                    f"ker A) >= at the flow's limit beta_inf, a = {a}",
                    measured=potential(neighbours).sum(-1),
                    bound=at_limit.expand(neighbours.shape[0]),
                    tolerance=Tolerance(error, f"roundoff of the d = {d} terms of the potential, "
                                               f"8 u (4 + z^2) each, relative to its value"),
                    parameters={"a": a, "tau": tau, "directions": null.shape[0]})


def _stated_potential(run: Run, a: float) -> Callable[[torch.Tensor], torch.Tensor]:
    r""":math:`\beta \mapsto q(\beta/s(a))` with the stated q and scale s."""
    s = run.stated["scale"](a)
    return lambda beta: run.stated["q"](beta / s)


#: Largest ratio of consecutive initial scales a along :func:`_minimisers`' continuation.
CONTINUATION = 1.5


def _minimisers(potential_at: Callable[[float], Callable[[torch.Tensor], torch.Tensor]],
                A: torch.Tensor, y: torch.Tensor, scales: Sequence[float]
                ) -> dict[float, tuple[torch.Tensor, torch.Tensor] | Diverged]:
    r""":math:`\arg\min_{A\beta=y}\sum` ``potential_at(a)`` (and the KKT condition number)
    for each ``a`` in ``scales``, or the :class:`Diverged` of its solve, by continuation in
    a: from the largest a down, each solve starts from the previous minimiser (feasible),
    through intermediate scales at most a factor :data:`CONTINUATION` apart. As a shrinks the
    potential tends to the l1 norm (curvature ~ a^-2 near 0) and Newton from 0 stalls (a =
    0.1: KKT residual 0.4 after 100 or 400 steps); from a nearby scale's minimiser it
    converges. A solve that diverges restarts the path from 0."""
    zero = torch.zeros(1, A.shape[1], dtype=A.dtype, device=A.device)
    top = sorted(set(scales), reverse=True)
    path = [top[0]]
    for hi, lo in zip(top, top[1:]):
        n = math.ceil(math.log(hi / lo) / math.log(CONTINUATION))
        path += [hi * (lo / hi) ** (j / n) for j in range(1, n)] + [lo]
    solved, start = {}, zero
    for a in path:
        potential = potential_at(a)
        try:
            start, condition = bregman_projection(
                lambda b: _derivatives(potential, b)[0], lambda b: _derivatives(potential, b)[1],
                A, y, start)
            solved[a] = (start, condition)
        except Diverged as exc:
            solved[a], start = exc, zero
    return {a: solved[a] for a in scales}


def speed_floor(A: torch.Tensor, y: torch.Tensor, a: float, x_bound: float,
                dtype: torch.dtype) -> float:
    r"""Roundoff floor of the computed speed :math:`|\dot\beta|` of the depth-2 flow at an
    interpolant (where the exact speed is 0), for :math:`w_+w_- = a^2` (conserved) and
    :math:`|\beta| \le` ``x_bound``: :math:`\dot\beta = -4\mu g` with
    :math:`\mu = w_+^2 + w_-^2 = \sqrt{\beta^2 + 4a^4}`. The computed
    :math:`\beta = w_+^2 - w_-^2` is off by up to :math:`2u\mu` per coordinate, the residual
    :math:`A\beta - y` by :math:`|A|(2u\mu) + du|A||\beta| + u|y|` (d-term sums), so
    :math:`g = A^\top r/N` by :math:`|A|^\top` of that over N, and the speed by
    :math:`4\mu` times it: :math:`4u\mu_{max}\max_k(|A|^\top(|A|(2\mu_{max} +
    d\,x_{bound}) + |y|))_k/N`, :math:`\mu_{max} = \sqrt{x_{bound}^2 + 4a^4}`. It grows like
    :math:`a^4`: ~4800 u at a = 3 on the default regression (600 u measured), ~300 u at a
    <= 0.5."""
    u = unit_roundoff(dtype)
    N, d = A.shape
    mu = math.sqrt(x_bound**2 + 4 * a**4)
    rows = A.abs().sum(1) * (2 * mu + d * x_bound) + y.abs()
    return 4 * u * mu * float((A.abs().T @ rows).max()) / N


def _implicit_bias(run: Run) -> Iterator[Evidence]:
    p = run.params["bias"]
    problem, x_star = default_regression(run.generator("problem"), device=run.device,
                                         dtype=run.dtype)
    A, y = problem.A, problem.y
    N, d = A.shape
    curvature = float(torch.linalg.matrix_norm(A, ord=2)) ** 2 / N
    flow = DifferenceOfPowersFlow(problem.grad, 2)
    l1, l2 = min_norm_solutions(A, y)
    transition = {}
    # RK4 is stable for dt lambda_max < 2.78; lambda_max <= curvature * mu with
    # mu = 4 sqrt(beta^2 + 4 a^4) (derived) and |beta| <= x_bound along the path.
    steps = [p["safety"] / (curvature * 4 * math.sqrt(p["x_bound"] ** 2 + 4 * a**4))
             for a in p["a"]]
    W0 = torch.cat([torch.full((2, 1, d), a, dtype=run.dtype, device=run.device)
                    for a in p["a"]], dim=1)
    # At rest: the speed of x within speed_tol_u units of roundoff (500 u = 1.1e-13 in
    # float64), below which the dt/2 run and the solve decide the budget, or within the
    # computed speed's own roundoff floor where that is larger (a = 3: ~600 u measured at
    # interpolants, so a 500 u test never fires). The floor is fixed by a, A and y before the
    # run, so it cannot grow with a run that fails to settle.
    rest = [max(p["speed_tol_u"] * unit_roundoff(run.dtype),
                speed_floor(A, y, a, p["x_bound"], run.dtype)) for a in p["a"]]
    # One run per a, each stopping at its own rest speed.
    limits = run.memo("limits", lambda: [
        flow_limits(flow, W0[:, k:k + 1], flow.beta, dt=[dt], sizes=[1], chunk=p["chunk"],
                    tol=tol, max_steps=p["max_steps"],
                    tangent=lambda W, V: _beta_tangent(W, V, flow.D))[0]
        for k, (dt, tol) in enumerate(zip(steps, rest))])
    minimisers = _minimisers(lambda a: _stated_potential(run, a), A, y, p["a"])
    for a, limit, tol in zip(p["a"], limits, rest):
        s = run.stated["scale"](a)
        potential = _stated_potential(run, a)

        quantity = (f"limit of gradient flow on w_+^2 - w_-^2 from a = {a} vs argmin_(A beta = "
                    f"y) sum q(beta/s(a))")
        solved = minimisers[a]
        if isinstance(solved, Diverged):  # decides nothing at this a; the others still count
            yield undecided(Route.NUMERIC, quantity, f"no minimiser to compare with: {solved}",
                            tolerance=Tolerance(0.0, "not compared"), parameters={"a": a})
        else:
            target, condition = solved
            yield limit_evidence(quantity, target, limit, float(condition.max()), run.dtype,
                                 {"a": a, "rest speed": tol})
        yield _minimality(potential, limit.fine, A, a, s)
        transition[f"a={a}"] = {"l1": float(limit.fine.abs().sum()),
                                "dist to min-l1": float((limit.fine - l1).abs().max()),
                                "dist to min-l2": float((limit.fine - l2).abs().max())}
    run.figure("kernel-to-rich transition: limits from a 1 (small a: toward min-l1, large a: "
               "toward min-l2)",
               {**transition, "min-l1 norm": float(l1.abs().sum()),
                "min-l2 solution l1 norm": float(l2.abs().sum()),
                "min-l1 solution = x*": float((l1 - x_star).abs().max())})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _implicit_bias(run)


_POSITIVE_FACTOR = ("a positive factor on q moves no argmin: the statement fixes q only up "
                    "to one (ns.thm4.6's potential agrees with it up to the factor 4/a^2)")

CLAIM = register(Claim(
    id="ns.prior.woodworth",
    paper=PAPER,
    kind="theorem",
    title="Known answer: Woodworth et al. 2020, kernel and rich regimes (q = 2)",
    source="Woodworth, Gunasekar, Lee, Moroshko, Savarese, Golan, Soudry, Srebro, COLT 2020 "
           "(arXiv 2002.09277); SOURCES §5.1",
    statement=r"\beta=w_+^2-w_-^2,\ w_\pm(0)=a\mathbb 1:\ \text{gradient flow on "
              r"underdetermined least squares converges to }\arg\min_{X\beta=y}\sum_i "
              r"q(\beta_i/a^2),\ q(z)=2-\sqrt{4+z^2}+z\operatorname{arcsinh}(z/2);\ "
              r"\text{depth }D:\ w_+^{2-D}=a^{2-D}-D(D-2)\theta,\ \theta=-\int_0^t g.",
    reading=r"Checked as printed in SOURCES, for the squared loss f=\tfrac1{2N}"
            r"\|A\beta-y\|^2 (the scale of f changes time, not the limit). Its relation to "
            r"Never Saddle: with u=w_++w_-, v=w_+-w_-, \beta=uv and u^2-v^2=4a^2, so it is "
            r"the L=2, q=2 product of ns.thm4.6 with balance offset 4a^2 (time runs twice as "
            r"fast); the potentials agree up to a positive factor and affine terms, which do "
            r"not move the minimiser (so the check cannot, and does not, fix q's positive "
            r"scale). The limit is checked to be a minimum of the stated potential on "
            r"A\beta=y (its value at feasible neighbours), not only a KKT point. The depth-D "
            r"relation is checked as an identity along the flow, in its rate and in its values "
            r"(the rate integrated from w_+(0)=a) (D = 3, 4, 5).",
    parameters={
        "quick": {"depths": [3, 4, 5],
                  "bias": {"a": [0.5, 1.5], "x_bound": 2.0, "safety": 1.0, "chunk": 100,
                           "speed_tol_u": 500, "max_steps": 20000}},
        "full": {"depths": [3, 4, 5, 6],
                 "bias": {"a": [0.1, 0.2, 0.5, 1.0, 1.5, 3.0], "x_bound": 2.0, "safety": 0.5,
                          "chunk": 100, "speed_tol_u": 500, "max_steps": 400000}},
    },
    stated={"q": stated_q, "scale": stated_scale, "depth_D": stated_depth_D},
    check=check,
    control=NegativeControl("q(beta/a) in place of q(beta/a^2)", {"scale": linear_scale}),
    equivalent_mutants={"q:scale": _POSITIVE_FACTOR, "q:nudge": _POSITIVE_FACTOR,
                        "scale:sign": "q is even, so q(beta/(-a^2)) = q(beta/a^2): the same "
                                      "potential"},
    assumptions=(Assumption("depth", "D >= 3 for the depth-D relation (Woodworth et al. 2020; "
                            "at D = 2 its exponent 2 - D vanishes)",
                            lambda p: all(D >= 3 for D in p["depths"])),
                 Assumption("initial scale", "a > 0 (w_+(0) = w_-(0) = a 1)",
                            lambda p: all(a > 0 for a in p["bias"]["a"]))),
    # below a = 0.3 the flow takes longer than a few seconds (the KKT solve of the near-l1
    # potential needs _minimisers' continuation in a)
    space={"depths": Choice(((3,), (4,), (5,), (6,), (8,), (3, 4, 5))),
           "bias.a": Choice(((0.3,), (0.5,), (1.0,), (1.5,), (2.0,), (3.0,), (0.5, 1.5))),
           "seed": SEED},
))
