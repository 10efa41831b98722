r"""Li2's energy (Eq. 7, Thm. 1) and the Stage-II node update (Eq. 6), by differentiation alone.

.. math:: \mathcal E(\mathbf w) = \tfrac12\,\|\tilde Y^\top\sigma(X\mathbf w)\|_2^2,
          \qquad \tilde Y = P_1^\perp Y.

The Stage-II update is derived from the network :math:`F=\sigma(XW)`: the loss depends on
:math:`W` only through :math:`F`, so the chain rule gives
:math:`-\partial J/\partial W_{aj} = \sum_{ik} (G_F)_{ik}\,\partial F_{ik}/\partial W_{aj}`
with :math:`G_F=-\partial J/\partial F`; Stage II replaces :math:`G_F` by
:math:`\tilde Y\tilde Y^\top\tilde F` (§2.3). Neither derivation uses the paper's closed form
:math:`X^\top D\,\tilde Y\tilde Y^\top\sigma(X\mathbf w)`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy as sp

from theory.derivation import Derivation
from theory.matrices import centering_matrix, frobenius_sq, gradient, symbolic_matrix

Elementwise = Callable[[sp.Expr], sp.Expr]

SYMBOLIC_ACTIVATIONS = ("generic", "x2")


class sigma_prime(sp.Function):  # noqa: N801 - printed as the paper's sigma'
    r"""The derivative :math:`\sigma'` of the generic activation, an undefined function."""


class sigma(sp.Function):  # noqa: N801 - printed as the paper's sigma
    r"""A generic differentiable activation: undefined, except that sympy's chain rule maps
    :math:`\tfrac{d}{dz}\sigma(z)` to :math:`\sigma'(z)`.

    >>> z = sp.Symbol("z")
    >>> sp.diff(sigma(2*z)**2, z)
    4*sigma(2*z)*sigma_prime(2*z)
    """

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return sigma_prime(self.args[0])


def symbolic_activation(name: str) -> tuple[Elementwise, Elementwise]:
    r"""``(sigma, sigma')`` as elementwise sympy callables.

    ``"generic"``: the undefined functions :class:`sigma` and :class:`sigma_prime`;
    ``"x2"``: :math:`\sigma(z) = z^2` with :math:`\sigma'` obtained by differentiating it.

    >>> s, ds = symbolic_activation("x2")
    >>> ds(sp.Symbol("z"))
    2*z
    """
    if name == "generic":
        return sigma, sigma_prime
    if name == "x2":
        t = sp.Dummy("t", real=True)
        return sp.Lambda(t, t**2), sp.Lambda(t, sp.diff(t**2, t))
    raise ValueError(f"activation: {name!r} is not one of {', '.join(SYMBOLIC_ACTIVATIONS)}")


def centred_matrix(name: str, n: int, M: int) -> sp.Matrix:
    r"""A generic sample-centred ``n x M`` matrix: rows ``0..n-2`` free, the last row minus
    their sum. Every :math:`P_1^\perp Y` has this form, and :math:`P_1^\perp\tilde Y=\tilde Y`.

    >>> centred_matrix("Y", 2, 1)
    Matrix([
    [ Y_00],
    [-Y_00]])
    """
    if n < 2:
        raise ValueError(f"n: {n} must be >= 2 (one sample has nothing to centre against)")
    free = symbolic_matrix(name, n - 1, M)
    return free.col_join(-sp.ones(1, n - 1) * free)


def energy(w: sp.Matrix, X: sp.Matrix, Yt: sp.Matrix, act: Elementwise) -> sp.Expr:
    r""":math:`\mathcal E(\mathbf w) = \tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|_2^2` (Eq. 7)."""
    return frobenius_sq(Yt.T * (X * w).applyfunc(act)) / 2


def derive_energy_gradient(n: int, d: int, M: int, activation: str = "generic") -> Derivation:
    r"""Differentiate :math:`\mathcal E` entry by entry in :math:`\mathbf w` (symbolic X, Y).

    ``Yt`` is a free ``n x M`` matrix: the gradient identity of Thm. 1 holds for any matrix in
    the place of :math:`\tilde Y`, the centred one included, and free entries keep the
    expressions small. ``result`` is ``(grad, w, X, Yt, sigma, sigma')``: the ``d x 1``
    gradient, the symbolic ``w`` (``d x 1``), ``X`` (``n x d``), ``Yt`` and the activation
    pair used.
    """
    act, dact = symbolic_activation(activation)
    d_ = Derivation(f"grad E by differentiating the energy (n={n}, d={d}, M={M}, "
                    f"sigma={activation})")
    X, w, Yt = symbolic_matrix("X", n, d), symbolic_matrix("w", d, 1), symbolic_matrix("Yt", n, M)
    E = d_.step("energy E(w) = 1/2 ||Yt^T sigma(X w)||^2 (Eq. 7)", energy(w, X, Yt, act))
    grad = d_.step("grad E: derivative of E in each entry w_a (sympy chain rule)",
                   gradient(E, w).applyfunc(sp.expand))
    d_.result = (grad, w, X, Yt, act, dact)
    return d_


def derive_stage2_update(n: int, d: int, M: int, K: int,
                         activation: str = "generic") -> Derivation:
    r"""The Stage-II update of all K nodes, derived from the network :math:`F=\sigma(XW)`.

    Steps: the vector-Jacobian product
    :math:`U_{aj}=\partial_{W_{aj}}\langle G, \sigma(XW)\rangle_F` with a free cotangent
    :math:`G` (this is :math:`-\partial J/\partial W` when :math:`G=-\partial J/\partial F`);
    then :math:`G := \tilde Y\tilde Y^\top P_1^\perp F` (Stage II), with :math:`\tilde Y` a
    generic centred matrix (:func:`centred_matrix`). ``result`` is
    ``(U, W, X, Yt, sigma, sigma')`` with ``U`` and ``W`` of shape ``d x K``.
    """
    act, dact = symbolic_activation(activation)
    d_ = Derivation(f"Stage-II node update from the network (n={n}, d={d}, M={M}, K={K}, "
                    f"sigma={activation})")
    X, W = symbolic_matrix("X", n, d), symbolic_matrix("W", d, K)
    P = centering_matrix(n)
    Yt = d_.step("centred labels Yt (columns sum to 0, the general form of P Y)",
                 centred_matrix("Yt", n, M))
    d_.step("check: P Yt - Yt = 0", (P * Yt - Yt).applyfunc(sp.expand))
    F = d_.step("hidden activations F = sigma(X W)", (X * W).applyfunc(act))
    G = symbolic_matrix("G", n, K)
    vjp = d_.step("chain rule: -dJ/dW_aj = sum_ik G_ik dF_ik/dW_aj, G = -dJ/dF held fixed",
                  gradient(sum((g * f for g, f in zip(G, F)), sp.Integer(0)), W))
    G_stage2 = d_.step("Stage II: G_F = Yt Yt^T Ft with Ft = P F (sample-centred F)",
                       Yt * Yt.T * (P * F))
    U = d_.step("node updates dW/dt = -dJ/dW with that G_F (columns: nodes)",
                vjp.subs(dict(zip(G, G_stage2)), simultaneous=True).applyfunc(sp.expand))
    d_.result = (U, W, X, Yt, act, dact)
    return d_


def freeze_activation(exprs: Sequence[sp.Matrix],
                      functions: Sequence[type[sp.Function]] = (sigma, sigma_prime),
                      ) -> list[sp.Matrix]:
    r"""Replace each applied :math:`\sigma(z_i)`, :math:`\sigma'(z_i)` by its own symbol.

    For a generic :math:`\sigma` and generic :math:`X,\mathbf w` the points
    :math:`z_i=\mathbf x_i^\top\mathbf w` are distinct, so the values of :math:`\sigma` and
    :math:`\sigma'` there are independent unknowns: an identity holds for every
    differentiable :math:`\sigma` iff it holds as a polynomial identity in these symbols.
    The frozen form lets an exact rational witness expose a false identity (sympy cannot
    evaluate an undefined function at a number). The same application gets the same symbol
    in every expression of ``exprs``.
    """
    applied = set().union(*(e.atoms(*functions) for e in exprs))
    table = {a: sp.Symbol(f"{a.func}[{i}]", real=True)
             for i, a in enumerate(sorted(applied, key=sp.default_sort_key))}
    return [e.xreplace(table) for e in exprs]
