r"""Closed forms and derivations (sympy only): the core's public API.

Every derivation starts from a definition (a loss, an energy, a flow) and returns the steps it
took as a :class:`Derivation`, so reports can show them. The core, for any paper:

* :class:`Derivation`, :class:`Step`: a derivation's steps and the object it arrives at;
* :func:`is_zero` (:class:`IdentityCheck`, :class:`ZeroStatus`): decides an identity
  three-valued (zero / nonzero with an exact witness / undecided under a time limit), never
  with a bare ``simplify``;
* :mod:`theory.matrices`: symbolic matrices with named entries, the centring operator,
  matrix gradients;
* :mod:`theory.groups`: finite groups as Cayley tables and their exact irreps.

Each paper's derivations live in its own package (:mod:`theory.li2`, :mod:`theory.ns`).

>>> import sympy as sp
>>> from theory import Derivation, ZeroStatus, is_zero
>>> t, u0, s = sp.symbols("t u_0 s", positive=True)
>>> d = Derivation("logistic growth solves du/dt = u (s - u)")
>>> u = d.step("closed form", s * u0 * sp.exp(s * t) / (s - u0 + u0 * sp.exp(s * t)))
>>> residual = d.step("residual of the ODE", sp.diff(u, t) - u * (s - u))
>>> is_zero(residual).status is ZeroStatus.ZERO
True
"""
from theory.derivation import Derivation, Step
from theory.identity import IdentityCheck, ZeroStatus, is_zero

__all__ = ["Derivation", "IdentityCheck", "Step", "ZeroStatus", "is_zero"]
