r"""Li2's memorisation problem (Thm. 5, Lemmas 5-6, App. A.4), derived with sympy.

* :func:`derive_phi`: :math:`\phi(x)=\sigma'(x)/x` from the activation's definition, the sign
  of :math:`x^2\phi'(x)=x\sigma''(x)-\sigma'(x)` on :math:`(0,\sqrt2]` (exactly, by sympy's
  assumptions on a factored form, or by interval arithmetic with :mod:`mpmath.iv`), hence
  whether :math:`\phi` is nondecreasing or strictly decreasing there, and :math:`\phi(0^+)`.
* :func:`derive_power_family`: the same for :math:`x^q` with a symbolic :math:`q\ge2`.
* :func:`derive_kkt`: the Lagrangian of :math:`\max\sum_gp_g\sigma(s_g)` s.t.
  :math:`\sum_gs_g^2=2`, its stationarity and second-order conditions, generic :math:`\sigma`.
* :func:`derive_single_target_energy`: Eq. 7 on the single-target data (samples
  :math:`(g,g^{-1}h)` with multiplicities) under three label readings: sample-centred
  (:math:`\tilde Y=0`, the energy vanishes), uncentred, and class-centred (the author's code).
* :func:`derive_vertex_maxima`: which focused points :math:`\sqrt2\mathbf e_g` are strict
  local maxima of :math:`F` on the sphere, from the exact second-order condition.

Nothing here uses the paper's classification or its closed forms.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import mpmath
import sympy as sp

from theory.derivation import Derivation
from theory.li2.energy import sigma, sigma_prime
from theory.matrices import centering_matrix, frobenius_sq

X = sp.Symbol("x", positive=True)
#: The budget :math:`\sum_gs_g^2\le2` of App. A.4; coordinates live in :math:`(0,\sqrt2]`.
UPPER = sp.sqrt(2)
MONOTONICITY = ("nondecreasing", "strictly decreasing", "neither", "undecided")


def symbolic_sigma(name: str) -> sp.Expr:
    r""":math:`\sigma(x)` for :math:`x>0` (where the reduced problem lives): ``x^<q>`` with a
    rational ``q``, ``x^2-x^3/3``, ``relu`` (:math:`x` on :math:`x>0`), ``silu``, ``tanh``,
    ``sigmoid``.

    >>> symbolic_sigma("x^3/2")
    x**(3/2)
    """
    table = {
        "x^2-x^3/3": X**2 - X**3 / 3,
        "relu": X,
        "silu": X / (1 + sp.exp(-X)),
        "tanh": sp.tanh(X),
        "sigmoid": 1 / (1 + sp.exp(-X)),
    }
    if name in table:
        return table[name]
    if name.startswith("x^"):
        try:
            q = sp.nsimplify(name[2:], rational=True)
        except (sp.SympifyError, TypeError, ValueError):
            q = None
        if q is None or not q.is_Rational or not q > 0:
            raise ValueError(f"activation: {name!r}: the exponent of x^q must be a positive "
                             f"rational")
        return X**q
    raise ValueError(f"activation: {name!r} is not x^<q>, {', '.join(table)}")


@dataclass(frozen=True)
class PhiFacts:
    r"""What :func:`derive_phi` finds: :math:`\sigma`, :math:`\phi`, the numerator
    :math:`N=x^2\phi'`, :math:`\phi(0^+)` (``sp.oo`` when infinite), the monotonicity of
    :math:`\phi` on :math:`(0,\sqrt2]` (one of :data:`MONOTONICITY`) and how it was decided."""

    name: str
    sigma: sp.Expr
    phi: sp.Expr
    numerator: sp.Expr
    phi_at_zero: sp.Expr
    monotonicity: str
    method: str


def _exact_sign(expr: sp.Expr) -> str | None:
    """'negative' / 'nonnegative' on x > 0 from sympy's assumptions on a factored form."""
    for form in (expr, sp.factor(sp.together(expr))):
        if form.is_negative:
            return "negative"
        if form.is_nonnegative:
            return "nonnegative"
    return None


def _interval_sign(expr: sp.Expr, upper: sp.Expr, depth: int) -> tuple[str, str]:
    """Sign of ``expr`` on [0, upper] by interval bisection (:mod:`mpmath.iv`, outward
    rounding): 'both' when pieces of each sign are certified (a sign change, even if the
    pieces around it stay uncertified), 'negative' / 'nonnegative' when every piece is
    certified with that sign, else 'undecided'."""
    iv = mpmath.iv
    f = sp.lambdify(X, expr.rewrite(sp.exp), modules=[
        {"exp": iv.exp, "log": iv.log, "sqrt": iv.sqrt}, "mpmath"])
    hi = mpmath.mpf(float(upper)) * (1 + mpmath.mpf(2) ** -40)  # covers (0, upper]
    pieces, signs, open_pieces = [iv.mpf([0, hi])], set(), []
    smallest = float(hi) / 2**depth
    while pieces:
        piece = pieces.pop()
        value = f(piece)
        if value.b < 0:
            signs.add("negative")
        elif value.a >= 0:
            signs.add("nonnegative")
        elif float(piece.delta) < smallest:
            open_pieces.append(piece)
        else:
            mid = piece.mid
            pieces += [iv.mpf([piece.a, mid]), iv.mpf([mid, piece.b])]
    method = f"interval bisection (mpmath.iv, depth <= {depth})"
    if len(signs) == 2:
        return "both", method
    if open_pieces or not signs:
        return "undecided", f"{method}: {len(open_pieces)} piece(s) uncertified"
    return signs.pop(), method


def _monotonicity(sign: str) -> str:
    return {"negative": "strictly decreasing", "nonnegative": "nondecreasing",
            "both": "neither"}.get(sign, "undecided")


@lru_cache(maxsize=64)
def derive_phi(name: str, *, depth: int = 16) -> Derivation:
    r""":math:`\phi=\sigma'/x` and its monotonicity on :math:`(0,\sqrt2]`, from
    :math:`\sigma`'s definition (:func:`symbolic_sigma`). ``result`` is a :class:`PhiFacts`.

    :math:`\phi'=N/x^2` with :math:`N=x\sigma''-\sigma'`, so the sign of :math:`N` decides:
    :math:`N<0` on :math:`(0,\sqrt2]` gives :math:`\phi` strictly decreasing, :math:`N\ge0`
    nondecreasing. Exact when sympy can sign a factored :math:`N` for :math:`x>0` (a
    statement on all of :math:`(0,\infty)`); otherwise interval arithmetic certifies the sign
    on :math:`[0,\sqrt2]`. Cached: the derivation is shared by the claims that use it.

    >>> derive_phi("relu").result.monotonicity
    'strictly decreasing'
    """
    s = symbolic_sigma(name)
    d = Derivation(f"phi = sigma'/x for sigma = {name}, on (0, sqrt 2]")
    d.step("sigma(x), x > 0", s)
    ds = d.step("sigma'(x)", sp.diff(s, X))
    phi = d.step("phi(x) = sigma'(x)/x", sp.powsimp(sp.expand(ds / X)))
    N = d.step("x^2 phi'(x) = x sigma''(x) - sigma'(x)",
               sp.factor(sp.together(X * sp.diff(s, X, 2) - ds)))
    at_zero = d.step("phi(0+) (limit)", sp.limit(phi, X, 0, "+"))
    sign = _exact_sign(N)
    method = "exact: sympy signs the factored numerator for all x > 0"
    if sign is None:
        sign, method = _interval_sign(N, UPPER, depth)
    mono = _monotonicity(sign)
    d.step(f"sign of x^2 phi' on (0, sqrt 2]: {sign} ({method}); so phi is {mono}")
    d.result = PhiFacts(name, s, phi, N, at_zero, mono, method)
    return d


@lru_cache(maxsize=1)
def derive_power_family() -> Derivation:
    r"""The same for :math:`\sigma=x^q` with symbolic :math:`q=2+r`, :math:`r\ge0`:
    :math:`x^2\phi'=q(q-2)x^{q-1}\ge0`, so :math:`\phi` is nondecreasing for every
    :math:`q\ge2` (constant at :math:`q=2`). ``result`` is a :class:`PhiFacts`."""
    r = sp.Symbol("r", nonnegative=True)
    q = 2 + r
    d = Derivation("phi = sigma'/x for sigma = x^q, q = 2 + r with r >= 0 (symbolic)")
    s = d.step("sigma(x) = x^q", X**q)
    ds = sp.diff(s, X)
    phi = d.step("phi(x) = sigma'(x)/x", sp.powsimp(sp.expand(ds / X)))
    N = d.step("x^2 phi'(x) = x sigma''(x) - sigma'(x)",
               sp.factor(sp.powsimp(sp.expand(X * sp.diff(s, X, 2) - ds))))
    sign = _exact_sign(N)
    mono = _monotonicity(sign or "undecided")
    d.step(f"sign for all x > 0, r >= 0: {sign}; so phi is {mono}")
    at_zero = d.step("phi(0+) for q = 2 (r = 0) and for q > 2", sp.Matrix(
        [sp.limit(phi.subs(r, 0), X, 0, "+"), sp.limit(phi.subs(r, sp.Rational(1, 2)), X, 0,
                                                     "+")]))
    d.result = PhiFacts("x^q (q >= 2)", s, phi, N, at_zero, mono,
                        "exact: sympy signs the factored numerator for x > 0, r >= 0")
    return d


def derive_kkt(M: int) -> Derivation:
    r"""KKT of :math:`\max F(\mathbf s)=\sum_gp_g\sigma(s_g)` s.t. :math:`\sum_gs_g^2=2`, for a
    generic :math:`\sigma` (App. A.4, Lemma 5). Lagrangian
    :math:`\mathcal L=F-\lambda(\sum_gs_g^2-2)`; at an active coordinate (:math:`s_g>0`)
    stationarity is :math:`p_g\sigma'(s_g)-2\lambda s_g=0`. ``result`` is
    ``(stationarity / s, s, p, lam)``: the stationarity condition divided by :math:`s_g`,
    one entry per coordinate, and the symbols. Also recorded: the second derivative of
    :math:`\mathcal L` equals :math:`p_gs_g\phi'(s_g)` at a stationary point.
    """
    if M < 1:
        raise ValueError(f"M: {M} must be >= 1")
    d = Derivation(f"KKT conditions of max sum_g p_g sigma(s_g) s.t. sum_g s_g^2 = 2 (M={M}, "
                   f"generic sigma)")
    s = sp.symbols(f"s0:{M}", positive=True)
    p = sp.symbols(f"p0:{M}", positive=True)
    lam = sp.Symbol("lambda", positive=True)
    F = sum((pg * sigma(sg) for pg, sg in zip(p, s)), sp.Integer(0))
    L = d.step("Lagrangian L = F(s) - lambda (sum_g s_g^2 - 2)",
               F - lam * (sum((sg**2 for sg in s), sp.Integer(0)) - 2))
    grad = d.step("dL/ds_g (sympy)", sp.Matrix([sp.diff(L, sg) for sg in s]))
    per_s = d.step("dL/ds_g divided by s_g > 0 (active coordinates)",
                   sp.Matrix([sp.expand(gr / sg) for gr, sg in zip(grad, s)]))
    d.step("dL/dlambda = 0 is the budget sum_g s_g^2 = 2; if it were slack, lambda = 0 and "
           "p_g sigma'(s_g) = 0 at every active coordinate, impossible when sigma' > 0 on x > 0",
           sp.diff(L, lam))
    second = sp.diff(L, s[0], 2)
    kkt_lam = sp.solve(grad[0], lam)[0]
    phi_prime = sp.diff(sigma_prime(s[0]) / s[0], s[0])
    d.step("d^2L/ds_0^2 at a stationary point (2 lambda = p_0 sigma'(s_0)/s_0) minus "
           "p_0 s_0 phi'(s_0): the Lagrangian's curvature is p_g s_g phi'(s_g), negative "
           "where phi decreases", sp.expand(second.subs(lam, kkt_lam) - p[0] * s[0] * phi_prime))
    d.result = (per_s, s, p, lam)
    return d


def _single_target_rows(table: Sequence[Sequence[int]], target: int,
                        counts: Sequence[int]) -> list[tuple[int, int]]:
    M = len(table)
    if not 0 <= target < M:
        raise ValueError(f"target: {target} must lie in range({M})")
    if len(counts) != M or min(counts) < 1:
        raise ValueError(f"counts: need {M} counts, each >= 1, got {list(counts)}")
    partner = [next(b for b in range(M) if table[g][b] == target) for g in range(M)]
    return [(g, partner[g]) for g in range(M) for _ in range(counts[g])]


@dataclass(frozen=True)
class SingleTargetEnergy:
    r"""Eq. 7 on the single-target data under three readings of the labels, and the symbols:
    ``u``, ``v`` (the two blocks of :math:`\mathbf w`) and ``partner[g]``
    :math:`=g^{-1}h`."""

    sample_centred: sp.Expr
    uncentred: sp.Expr
    class_centred: sp.Expr
    u: tuple[sp.Symbol, ...]
    v: tuple[sp.Symbol, ...]
    partner: tuple[int, ...]
    n: int


@lru_cache(maxsize=32)
def derive_single_target_energy(table: tuple[tuple[int, ...], ...], target: int,
                                counts: tuple[int, ...]) -> Derivation:
    r""":math:`\mathcal E(\mathbf w)=\tfrac12\|L^\top\sigma(X\mathbf w)\|^2` (Eq. 7, generic
    :math:`\sigma`) on the data :math:`\{(g,g^{-1}h)\}` with sample :math:`g` repeated
    ``counts[g]`` times, inputs :math:`[\mathbf e_g;\mathbf e_{g^{-1}h}]`, all labels
    :math:`\mathbf e_h`, for :math:`L=P_1^\perp Y` (the paper), :math:`L=Y` (uncentred) and
    :math:`L=Y-\tfrac1M\mathbf 1\mathbf 1^\top` (each target centred over the classes, as the
    author's code does). ``result`` is a :class:`SingleTargetEnergy`."""
    rows = _single_target_rows(table, target, counts)
    M, n = len(table), len(rows)
    d = Derivation(f"E on the single-target data (M={M}, h={target}, n={n}, generic sigma)")
    u = sp.symbols(f"u0:{M}", real=True)
    v = sp.symbols(f"v0:{M}", real=True)
    Xm = sp.zeros(n, 2 * M)
    for i, (g, b) in enumerate(rows):
        Xm[i, g] = Xm[i, M + b] = 1
    Y = sp.zeros(n, M)
    Y[:, target] = sp.ones(n, 1)
    f = (Xm * sp.Matrix([*u, *v])).applyfunc(sigma)  # sigma(u_g + v_{g^-1 h}) per sample
    Yt = centering_matrix(n) * Y
    d.step("P Y: every row of Y is e_h, so centring over samples leaves the zero matrix",
           sp.ZeroMatrix(n, M) if Yt.is_zero_matrix else Yt)
    sample = sp.expand(frobenius_sq(Yt.T * f) / 2)
    d.step("E under the paper's sample centring: 1/2 ||(PY)^T sigma(Xw)||^2", sample)
    unc = sp.expand(frobenius_sq(Y.T * f) / 2)
    d.step("E with uncentred labels: 1/2 ||Y^T sigma(Xw)||^2 = 1/2 (sum_i sigma(x_i.w))^2",
           sum(f, sp.Integer(0)) ** 2 / 2)
    cls = sp.expand(frobenius_sq((Y - sp.ones(n, M) / M).T * f) / 2)
    d.step("E with class-centred labels e_h - 1/M (the author's code), minus (1 - 1/M) x "
           "the uncentred E", sp.expand(cls - (1 - sp.Rational(1, M)) * unc))
    s = sp.Symbol("s", real=True)
    t = sp.Symbol("t", real=True)
    d.step("u^2 + v^2 - (s^2 + t^2)/2 with s = u + v, t = u - v: the sphere |w| = 1 is "
           "sum_g (s_g^2 + t_g^2) = 2, so a given s needs sum_g s_g^2 <= 2 (equality at t = 0)",
           sp.expand((s + t) ** 2 / 4 + (s - t) ** 2 / 4 - (s**2 + t**2) / 2))
    partner = tuple(next(b for b in range(M) if table[g][b] == target) for g in range(M))
    d.result = SingleTargetEnergy(sample, unc, cls, u, v, partner, n)
    return d


@dataclass(frozen=True)
class VertexMaxima:
    r"""Per vertex :math:`\sqrt2\mathbf e_g`: the first-order gain into the other coordinates
    :math:`\max_kp_k\sigma'(0)` (0 at a KKT point), the largest Lagrangian curvature
    :math:`\max_{k\ne g}(p_k\sigma''(0)-p_g\sigma'(\sqrt2)/\sqrt2)`, and whether the vertex is
    a strict local maximum (gain 0 and curvature < 0)."""

    first_order: tuple[sp.Expr, ...]
    curvature: tuple[sp.Expr, ...]
    strict: tuple[bool, ...]


def derive_vertex_maxima(name: str, p: Sequence[sp.Rational]) -> Derivation:
    r"""Which focused points are strict local maxima of :math:`F=\sum_gp_g\sigma(s_g)` on
    :math:`\sum_gs_g^2=2` (exact ``p``; :math:`\sigma` from :func:`symbolic_sigma`).

    At :math:`\sqrt2\mathbf e_g` the multiplier is :math:`2\lambda=p_g\sigma'(\sqrt2)/\sqrt2`;
    the tangent space is spanned by the other coordinates, where the Lagrangian's gradient is
    :math:`p_k\sigma'(0)` and its Hessian is diagonal,
    :math:`p_k\sigma''(0)-2\lambda`. The vertex is a strict local maximum iff the gradient
    vanishes and every diagonal entry is negative (for either sign of :math:`s_k`, so also on
    the full sphere of :math:`\mathbf w`). ``result`` is a :class:`VertexMaxima`.
    """
    if len(p) < 2:
        raise ValueError(f"p: need at least 2 probabilities, got {len(p)}")
    s = symbolic_sigma(name)
    d = Derivation(f"focused points of F that are strict local maxima (sigma = {name}, "
                   f"p = {list(p)})")
    ds, d2s = sp.diff(s, X), sp.diff(s, X, 2)
    at0 = d.step("sigma'(0+), sigma''(0+)", sp.Matrix([sp.limit(ds, X, 0, "+"),
                                                       sp.limit(d2s, X, 0, "+")]))
    first, curv, strict = [], [], []
    for g, pg in enumerate(p):
        two_lam = pg * ds.subs(X, UPPER) / UPPER
        gains = [pk * at0[0] for k, pk in enumerate(p) if k != g]
        diag = [pk * at0[1] - two_lam for k, pk in enumerate(p) if k != g]
        worst = max(diag, key=lambda e: float(e))
        first.append(max(gains, key=lambda e: float(e)))
        curv.append(worst)
        strict.append(bool(first[-1] == 0 and worst.is_negative))
        d.step(f"vertex g={g}: largest first-order gain and largest curvature "
               f"p_k sigma''(0) - p_g sigma'(sqrt2)/sqrt2 over k != g; strict local max: "
               f"{strict[-1]}", sp.Matrix([first[-1], worst]))
    d.step("number of focused points that are strict local maxima", sp.Integer(sum(strict)))
    d.result = VertexMaxima(tuple(first), tuple(curv), tuple(strict))
    return d
