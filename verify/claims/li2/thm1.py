r"""li2.thm1: Theorem 1, the energy function, with the Stage-II update (Eq. 6).

Routes: the paper's gradient :math:`X^\top D\,\tilde Y\tilde Y^\top\sigma(X\mathbf w)` (stated);
sympy's derivative of :math:`\mathcal E` and the Stage-II update derived from the network by
the chain rule (derived, symbolic); torch autograd of :math:`\mathcal E` (measured) and backprop
of the network with cotangent :math:`G_F=\tilde Y\tilde Y^\top\tilde F` (the Eq. 6 update,
called derived: it is obtained from the network and the Stage-II substitution, and shares no
code with :math:`\mathcal E`); sampled sizes and activations; and projected gradient ascent on
the sphere along the stated gradient, where :math:`\mathcal E` must not decrease.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache

import sympy as sp
import torch

from numerics.activations import ACTIVATIONS, Activation, activation
from numerics.li2.energy import (
    ascend,
    energy,
    energy_gradient,
    gradient_rounding_scale,
    sphere_smoothness_bound,
    sphere_step,
    stage2_node_update,
)
from numerics.li2.sphere_newton import gradient_and_hessian, newton_polish
from numerics.random import make_generator, randn
from numerics.li2.two_layer import center, one_hot_labels
from theory.li2.energy import (
    derive_energy_gradient,
    derive_stage2_update,
    freeze_activation,
)
from verify import (
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
    compare_cases,
    draw,
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.arrays import elementwise, gate, transpose
from verify.bounds import positive
from verify.claims.li2 import PAPER

# The derivations are pure functions of (sizes, activation) and do not involve the stated
# forms: the claim and its negative control share one.
_energy_gradient = lru_cache(maxsize=16)(derive_energy_gradient)
_stage2_update = lru_cache(maxsize=16)(derive_stage2_update)


def stated_energy_gradient(w, X, Yt, sigma, dsigma):
    r"""Thm. 1 as printed: :math:`\nabla\mathcal E=X^\top D\,\tilde Y\tilde Y^\top
    \sigma(X\mathbf w)`, :math:`D=\mathrm{diag}(\sigma'(X\mathbf w))`; ``w`` is a column
    (``(..., d, 1)`` for tensors)."""
    z = X @ w
    return transpose(X) @ gate(elementwise(dsigma, z),
                                Yt @ transpose(Yt) @ elementwise(sigma, z))


def gate_dropped_gradient(w, X, Yt, sigma, dsigma):  # noqa: ARG001 - same signature
    r"""Planted error: the gate :math:`D` dropped,
    :math:`X^\top\tilde Y\tilde Y^\top\sigma(X\mathbf w)`."""
    return transpose(X) @ Yt @ transpose(Yt) @ elementwise(sigma, X @ w)


SPACE = {"n": IntRange(2, 40), "d": IntRange(1, 12), "M": IntRange(2, 8),
         "activation": Choice(tuple(ACTIVATIONS)), "seed": SEED}


def _stated_rows(stated, W: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor,
                 act: Activation) -> torch.Tensor:
    """The stated gradient at each row of ``W`` (``(B, d)`` in, ``(B, d)`` out)."""
    return stated(W[..., None], X, Yt, act.fn, act.derivative).squeeze(-1)


def _draw_problem(n: int, d: int, M: int, B: int, gen: torch.Generator, run: Run):
    """Gaussian inputs ``X``, centred one-hot labels ``Yt`` and ``B`` unit-norm weights."""
    X = randn(n, d, generator=gen, device=run.device, dtype=run.dtype)
    Yt = center(one_hot_labels(n, M, gen, device=run.device, dtype=run.dtype))
    W = randn(B, d, generator=gen, device=run.device, dtype=run.dtype)
    return X, Yt, W / W.norm(dim=-1, keepdim=True)


def _gradient_tolerance(run: Run, n: int, d: int, M: int, condition: float) -> Tolerance:
    # Every route chains sums of products: X w (length d), the centring mean (n), Yt^T sigma
    # (n), Yt (M), X^T (n), plus a few ulps in sigma and sigma'. Each entry errs by at most
    # (total length) x u x its sum of absolute terms (Higham ch. 3); `condition` is the
    # largest such sum over the largest |entry| (the cancellation factor); 2x for two routes.
    u, ops = unit_roundoff(run.dtype), 2 * (d + 3 * n + M + 4)
    return Tolerance(ops * u * condition,
                     f"summation error: {ops} x u ({u:.1e}) x cancellation factor "
                     f"{condition:.3g} (sum of |terms| / max |gradient|)")


def _condition(W: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor, act: Activation,
               reference: torch.Tensor) -> float:
    """Largest sum of absolute terms of grad E over the largest |entry| of ``reference``."""
    scale = float(gradient_rounding_scale(W, X, Yt, act).max())
    largest = float(reference.abs().max())
    # labels all in one class (Yt = 0): every term vanishes, the routes agree exactly
    return scale / largest if largest > 0 else 1.0 if scale == 0 else math.inf


def _symbolic(run: Run) -> Iterator[Evidence]:
    stated, s = run.stated["grad_E"], run.params["symbolic_size"]
    for name in run.params["symbolic_activations"]:
        d = run.derivation(_energy_gradient(s["n"], s["d"], s["M"], name))
        grad, w, X, Yt, act, dact = d.result
        a, b = freeze_activation([stated(w, X, Yt, act, dact), grad])
        yield symbolic_identity(f"grad E, sigma = {name} (symbolic X, Yt, w)",
                                stated=a, derived=b, parameters={**s, "sigma": name})
    for name in run.params["symbolic_network_activations"]:
        d = run.derivation(_stage2_update(s["n"], s["d"], s["M"], s["K"], name))
        U, W, X, Yt, act, dact = d.result
        columns = [stated(W[:, j], X, Yt, act, dact) for j in range(W.shape[1])]
        a, b = freeze_activation([sp.Matrix.hstack(*columns), U])
        yield symbolic_identity(
            f"Stage-II node updates (Eq. 6, K={s['K']} nodes) = grad E(w_j), sigma = {name}",
            stated=a, derived=b, parameters={**s, "sigma": name},
            note="derived: chain rule through F = sigma(XW) with G_F = Yt Yt^T P F")


def _numeric(run: Run) -> Iterator[Evidence]:
    p, stated = run.params, run.stated["grad_E"]
    n, d, M, B = p["n"], p["d"], p["M"], p["batch"]
    X, Yt, W = _draw_problem(n, d, M, B, run.generator("problem"), run)
    for name in p["activations"]:
        act = activation(name)
        measured = energy_gradient(W, X, Yt, act)
        if name == "relu":
            gap = float((W @ X.T).abs().min())
            run.assume("relu pre-activations off the kink", gap > 0,
                       "ReLU is differentiable only where x_i^T w != 0 (Thm. 1 a.e.)",
                       f"min |x_i^T w| = {gap:.3g} over the {B} weights")
        yield compare(
            Route.NUMERIC, f"grad E at {B} unit-sphere weights, sigma = {name}",
            stated=_stated_rows(stated, W, X, Yt, act),
            derived=stage2_node_update(W.T, X, Yt, act).T,
            measured=measured,
            tolerance=_gradient_tolerance(run, n, d, M, _condition(W, X, Yt, act, measured)),
            parameters={"n": n, "d": d, "M": M, "batch": B, "sigma": name},
            note="derived = Eq. 6 node update by backprop of F = sigma(XW) with cotangent "
                 "G_F = Yt Yt^T Ft (all nodes at once); measured = autograd of E")


def _property(run: Run) -> Iterator[Evidence]:
    stated, rng = run.stated["grad_E"], run.rng("property")
    cases, worst_condition = [], 1.0
    for _ in range(run.params["property_cases"]):
        c = draw(SPACE, rng)
        act = activation(c["activation"])
        X, Yt, W = _draw_problem(c["n"], c["d"], c["M"], 4, make_generator(c["seed"]), run)
        measured = energy_gradient(W, X, Yt, act)
        if measured.abs().max() > 0:  # M labels all in one class give Yt = 0: nothing to test
            worst_condition = max(worst_condition, _condition(W, X, Yt, act, measured))
        cases.append((c, _stated_rows(stated, W, X, Yt, act), measured))
    hi = {k: SPACE[k].hi for k in ("n", "d", "M")}
    yield compare_cases(Route.PROPERTY, "grad E over sampled sizes and activations", cases,
                        tolerance=_gradient_tolerance(run, **hi, condition=worst_condition),
                        parameters={"space": str(SPACE)})


def _ascent_tolerance(run: Run, n: int, d: int, M: int, scale: float,
                      direction_norm: float) -> Tolerance:
    # A step's increment is the difference of two energies, each a chain of sums of lengths
    # d, n and M squared (relative error <= 2(n + d + M + 4)u of the rounding scale S >= E),
    # plus the rounding of the normalised iterate (<= (d + 3)u in norm, moving E by at most
    # that times |grad E|). The O(lr^2) term needs no allowance: lr <= 1/L makes it at most
    # half the first-order gain lr |xi|^2 (descent lemma, see sphere_smoothness_bound).
    u = unit_roundoff(run.dtype)
    value = u * (2 * 2 * (n + d + M + 4) * scale + (d + 3) * direction_norm)
    return Tolerance(value, f"rounding of two energies (scale {scale:.3g}) and of the "
                            f"iterate (|grad| {direction_norm:.3g}) at u = {u:.1e}; "
                            f"lr <= 1/L removes the O(lr^2) term")


def _ascent(run: Run) -> Iterator[Evidence]:
    p, stated = run.params, run.stated["grad_E"]
    n, d, M, B, steps = p["n"], p["d"], p["M"], p["ascent_batch"], p["ascent_steps"]
    X, Yt, W0 = _draw_problem(n, d, M, B, run.generator("ascent"), run)
    for name in p["ascent_activations"] + ("relu",) * ("relu" in p["activations"]):
        act = activation(name)
        L = sphere_smoothness_bound(X, Yt, act)
        if L == 0:  # labels all in one class: Yt = 0, E = 0 everywhere, nothing to ascend
            run.figure(f"ascent {name}: E = 0 identically (labels in one class)", L)
            continue
        lr = p["lr_factor"] / L
        trace = ascend(W0, X, Yt, act, lambda w: _stated_rows(stated, w, X, Yt, act), lr, steps)
        increments = trace.energy[1:] - trace.energy[:-1]
        decrease = float((-increments).clamp(min=0).max())
        gain = increments / (lr * trace.tangent_sq)
        run.figure(f"ascent {name}: lr, L, E start/end (mean), min and median of "
                   f"dE / (lr |xi|^2) (descent lemma: >= 1/2)",
                   [lr, L, float(trace.energy[0].mean()), float(trace.energy[-1].mean()),
                    float(gain.min()), float(gain.median())])
        if name not in p["ascent_activations"]:
            # ReLU's E has kinks: a finite step of its a.e. gradient can cross a ridge and lose
            # O(lr) energy at any lr, so the discrete test says nothing about the flow.
            run.figure(f"ascent {name} (not evidence: kinks): largest decrease of E", decrease)
            continue
        tol = _ascent_tolerance(run, n, d, M, float(trace.rounding_scale.max()),
                                float(trace.direction_norm.max()))
        yield compare(
            Route.NUMERIC, f"largest decrease of E over one projected ascent step, "
                           f"sigma = {name}",
            stated=0.0, measured=decrease, metric="absolute", tolerance=tol,
            parameters={"n": n, "d": d, "M": M, "batch": B, "steps": steps, "lr": lr,
                        "lr_rule": f"{p['lr_factor']} / L, L = sphere_smoothness_bound"},
            note="Lyapunov: steps follow the stated gradient projected on the sphere and "
                 "renormalised; E is the definition (Eq. 7)")


def tangent_spectrum(w: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """The d-1 eigenvalues of the Riemannian Hessian ``R`` (``(B, d, d)``) on the tangent
    space of each unit row of ``w``: the eigenpair whose vector is closest to ``±w`` (the
    normal direction, where ``R`` is 0 by construction) is dropped."""
    values, vectors = torch.linalg.eigh(R)
    normal = (vectors * w[:, :, None]).sum(1).abs().argmax(-1)
    keep = torch.ones_like(values, dtype=torch.bool)
    keep[torch.arange(w.shape[0], device=w.device), normal] = False
    return values[keep].reshape(w.shape[0], w.shape[1] - 1)


def _hessian_floor(dtype: torch.dtype, n: int, d: int, M: int, spectra: torch.Tensor
                   ) -> float:
    # The Hessian by reverse-over-reverse autograd chains the gradient's sums once more: each
    # entry errs by about 2 x the gradient's ops x u x its size; eigh moves an eigenvalue by at
    # most the error's 2-norm (Weyl), <= d x the largest entry error. Measured against the
    # spectrum's largest |eigenvalue|.
    u, ops = unit_roundoff(dtype), 2 * (d + 3 * n + M + 4)
    return 2 * ops * u * d * float(spectra.abs().max())


def second_order_item(spectra: torch.Tensor, name: str, parameters: dict,
                      n: int, d: int, M: int) -> Evidence:
    r"""The second-order test at points of the sphere: every tangent eigenvalue of the
    Riemannian Hessian of :math:`\mathcal E` (``spectra``, ``(B, d-1)``) below minus its
    roundoff floor, i.e. each point a strict local maximum."""
    floor = _hessian_floor(spectra.dtype, n, d, M, spectra)
    top = spectra.max(-1).values
    return at_most(
        Route.NUMERIC, f"second-order test: largest tangent Hessian eigenvalue of E at each "
                       f"maximum, sigma = {name}",
        measured=top.tolist(), bound=[-floor] * len(top), parameters=parameters,
        tolerance=Tolerance(0.0, f"strict: every eigenvalue below -{floor:.2g}, the Hessian's "
                                 f"roundoff (Weyl), so negative in exact arithmetic"),
        note="Riemannian Hessian P_T(H - (w^T grad E) I)P_T on the tangent space, by autograd "
             "of E (Eq. 7)")


def _maxima(run: Run) -> Iterator[Evidence]:
    """Nodes trained by the Stage-II network update (Eq. 6 by backprop, on the sphere) end at
    local maxima of E: ascent of E from each (the stated gradient, then Newton on E) stays
    at the node (cosine 1) and the point it reaches passes the second-order test."""
    p, stated = run.params["maxima"], run.stated["grad_E"]
    n, d, M, K = p["n"], p["d"], p["M"], p["nodes"]
    X, Yt, W0 = _draw_problem(n, d, M, K, run.generator("maxima"), run)
    u = unit_roundoff(run.dtype)
    for name in p["activations"]:
        act = activation(name)

        def E(w, act=act):
            return energy(w, X, Yt, act)

        _, _, R0 = gradient_and_hessian(W0, E)
        # lr from the largest curvature at the start: stable while it stays below 2/lr = 4x
        # that; whether training got there is checked below (run.ran), not assumed.
        lr = p["lr_factor"] / float(torch.linalg.matrix_norm(R0, ord=2).max())

        def train():
            W = W0
            for _ in range(p["train_steps"]):  # Eq. 6 for all K nodes, by backprop
                W = sphere_step(W, stage2_node_update(W.T, X, Yt, act).T, lr)
            return W

        W = run.memo("Stage-II training", train, key=(name, lr))
        _, xi, R = gradient_and_hessian(W, E)
        tang = tangent_spectrum(W, R)  # at a strict maximum all negative
        mu = tang.abs().min(-1).values
        reach = xi.norm(dim=-1) / mu
        inside = bool((tang < 0).all()) and float(reach.max()) <= 0.1
        run.ran(f"Stage-II training reached the basins of strict maxima, sigma = {name}", inside,
                f"max |grad_T E| / mu = {float(reach.max()):.2g} (<= 0.1: quadratic regime), "
                f"largest tangent eigenvalue {float(tang.max()):.3g} (< 0)")
        Wa = W
        for _ in range(p["ascent_steps"]):  # ascent of E along the stated gradient
            Wa = sphere_step(Wa, _stated_rows(stated, Wa, X, Yt, act), lr)
        top = newton_polish(Wa, E)  # to the critical point (roundoff), certified below
        params = {"n": n, "d": d, "M": M, "nodes": K, "sigma": name, "lr": lr,
                  "train_steps": p["train_steps"], "ascent_steps": p["ascent_steps"]}
        # A strict maximum w* with tangent eigenvalues <= -mu: along the geodesic from w* the
        # Riemannian gradient grows like mu x angle, so a node whose gradient is |xi| lies
        # within angle theta ~ |xi| / mu (up to O(theta) at theta <= 0.1), plus |g*| / mu for
        # the residual gradient g* where Newton stopped. 1 - cos theta <= theta^2 / 2;
        # 2 (...)^2 allows theta up to twice the linear estimate. Rounding: each unit vector
        # is normalised to (d + 3) u and the dot product sums d terms, 2 (2d + 6) u in all.
        theta = (xi.norm(dim=-1) + top.grad_norm) / mu
        tol = 2 * float(theta.max()) ** 2 + 2 * (2 * d + 6) * u
        yield compare(
            Route.NUMERIC, f"1 - cos(Stage-II trained node, local maximum of E reached by "
                           f"ascent from it), sigma = {name}",
            stated=[0.0] * K, measured=(1 - (top.w * W).sum(-1)).tolist(), metric="absolute",
            tolerance=Tolerance(tol, "2 ((|grad E(node)| + |grad E(max)|) / mu)^2, mu the "
                                     "smallest tangent curvature (Newton distance bound), "
                                     "+ rounding 2 (2d + 6) u"),
            parameters=params,
            note="trained: Eq. 6 by backprop through F = sigma(XW) with G_F = Yt Yt^T Ft, "
                 "projected on the sphere; maximum: projected ascent along the stated grad E, "
                 "then Newton on E (autograd)")
        run.figure(f"Stage-II maxima, sigma = {name}: E at each trained node, and the tangent "
                   f"curvatures (largest, smallest) at the maximum reached from it",
                   {"E": [round(float(e), 6) for e in top.energy],
                    "largest": [float(x) for x in top.spectrum.max(-1).values],
                    "smallest": [float(x) for x in top.spectrum.min(-1).values]})
        yield second_order_item(top.spectrum, name, params, n, d, M)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _numeric(run)
    yield from _property(run)
    yield from _ascent(run)
    yield from _maxima(run)


CLAIM = register(Claim(
    id="li2.thm1",
    paper=PAPER,
    kind="theorem",
    title="Energy function: Stage-II node dynamics (Eq. 6) are gradient ascent of E",
    source="Thm. 1 and Eqs. 6-7, §4.1",
    statement=r"\dot{\mathbf w}_j=X^\top D_j\mathbf g_j,\ \mathbf g_j\propto\tilde Y\tilde Y^\top"
              r"\sigma(X\mathbf w_j)\ \text{(Eq. 6) is gradient ascent of}\ "
              r"\mathcal E(\mathbf w_j)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w_j)\|_2^2,\ "
              r"\nabla\mathcal E=X^\top D\,\tilde Y\tilde Y^\top\sigma(X\mathbf w),\ "
              r"D=\mathrm{diag}(\sigma'(X\mathbf w))",
    reading=r"Stage II replaces G_F by \tilde Y\tilde Y^\top\tilde F (the positive factor in "
            r"\propto absorbed into time); since \tilde Y=P_1^\perp Y and P_1^\perp is a "
            r"symmetric projection, \tilde Y^\top F=\tilde Y^\top\tilde F, so node j's update "
            r"X^\top D_j\tilde Y\tilde Y^\top\mathbf f_j depends on \mathbf w_j alone. "
            r"\sigma is any differentiable activation (ReLU: a.e., away from x_i^\top w=0). "
            r"The unit-sphere constraint \|\mathbf w\|=1, which the paper attributes to weight "
            r"decay, is imposed here as a projection: ascent steps take the tangent part of "
            r"the gradient and renormalise; E is then checked to be non-decreasing along "
            r"steps with lr <= 1/L (L a bound on the curvature of E along the step arcs), "
            r"for smooth \sigma only (ReLU's kinks let finite steps lose energy at any lr). "
            r"'The local maxima of E are the emerging features' is read as: K nodes trained "
            r"by the Stage-II update (Eq. 6 by backprop through the network with G_F="
            r"\tilde Y\tilde Y^\top\tilde F, on the sphere) end at local maxima of E; each "
            r"trained node is compared with the maximum that ascent of E reaches from it (the "
            r"stated gradient, then Newton on E to roundoff): 1-\cos within the Newton "
            r"distance bound 2((|\mathrm{grad}\,E(\text{node})|+|\mathrm{grad}\,E(\max)|)/"
            r"\mu)^2 (\mu the smallest tangent curvature), and the second-order test there "
            r"(every tangent Hessian eigenvalue below minus its roundoff). That the maxima are "
            r"the features of group tasks is li2.thm2's and later claims'. 'E is a nonlinear "
            r"CCA between X and \tilde Y' is not decidable: the paper (as catalogued) gives no "
            r"objective, normalisation or constraint that would define the CCA it means "
            r"(canonical correlation normalises both sides' covariances, E normalises neither), "
            r"so there is no printed form to compare E with; the linear-\sigma case is "
            r"li2.remark-lda's.",
    parameters={
        # Quick: the generic-sigma identity alone. With sigma(z_i), sigma'(z_i) frozen to
        # independent symbols it is a polynomial identity valid for every differentiable
        # sigma, so the x^2 instance (full fidelity) adds no power; x^2 stays in the numeric
        # and property routes.
        "quick": {"symbolic_size": {"n": 3, "d": 2, "M": 2, "K": 2},
                  "symbolic_activations": ("generic",),
                  "symbolic_network_activations": ("generic",),
                  "n": 64, "d": 8, "M": 5, "batch": 16,
                  "activations": ("x2", "tanh", "silu", "relu"),
                  "property_cases": 40,
                  "ascent_activations": ("x2", "tanh", "silu"),
                  "ascent_batch": 16, "ascent_steps": 100, "lr_factor": 1.0,
                  # Stage-II training to the maxima: x^2 (the paper's sigma); lr = lr_factor /
                  # the largest tangent curvature at the start
                  "maxima": {"n": 64, "d": 8, "M": 5, "nodes": 8, "activations": ("x2",),
                             "train_steps": 200, "ascent_steps": 50, "lr_factor": 0.5}},
        "full": {"symbolic_size": {"n": 3, "d": 2, "M": 2, "K": 2},
                 "symbolic_activations": ("generic", "x2"),
                 "symbolic_network_activations": ("generic", "x2"),
                 "n": 512, "d": 32, "M": 10, "batch": 64,
                 "activations": tuple(ACTIVATIONS),
                 "property_cases": 300,
                 "ascent_activations": ("x2", "tanh", "silu", "sigmoid"),
                 "ascent_batch": 32, "ascent_steps": 500, "lr_factor": 1.0,
                 "maxima": {"n": 256, "d": 16, "M": 8, "nodes": 16,
                            "activations": ("x2", "silu"), "train_steps": 1500,
                            "ascent_steps": 200, "lr_factor": 0.5}},
    },
    stated={"grad_E": stated_energy_gradient},
    check=check,
    control=NegativeControl("gate dropped: grad E = X^T Yt Yt^T sigma(X w)",
                            {"grad_E": gate_dropped_gradient}),
    assumptions=(
        Assumption("lr within the descent-lemma range",
                   "ascent steps use lr = lr_factor / L with 0 < lr_factor <= 1, where "
                   "E cannot decrease for smooth sigma",
                   lambda p: 0 < p["lr_factor"] <= 1),
        Assumption("Stage-II training step below the stability limit",
                   "maxima.lr_factor in (0, 2): lr = lr_factor / the largest tangent curvature "
                   "at the start",
                   lambda p: 0 < p["maxima"]["lr_factor"] < 2),
        Assumption("maxima only for smooth activations",
                   "the second-order test needs E twice differentiable (not ReLU)",
                   lambda p: "relu" not in p["maxima"]["activations"]),
        Assumption("ascent only for smooth activations",
                   "the non-decrease evidence needs E in C^{1,1}; ReLU is reported as a figure",
                   lambda p: "relu" not in p["ascent_activations"]),
    ),
    # sizes, the step beyond the descent-lemma range (lr_factor > 1) and ReLU among the
    # ascents (outside: its kinks)
    space={"n": IntRange(2, 64), "d": IntRange(1, 12), "M": IntRange(2, 8),
           "lr_factor": LogUniform(0.1, 4.0),
           "ascent_activations": Choice((("x2",), ("tanh",), ("silu",), ("x2", "tanh", "silu"),
                                         ("sigmoid",), ("relu",))),
           "seed": SEED},
    bounds={"lr_factor": positive("the step lr_factor / L ascends only for lr_factor > 0")},
))
