"""Closed forms and derivations (sympy only).

Every derivation starts from a definition (a loss, an energy, a flow) and can return the
steps it took as a :class:`~theory.derivation.Derivation`, so reports can show them.
"""
from theory.derivation import Derivation, Step
from theory.identity import IdentityCheck, ZeroStatus, is_zero

__all__ = ["Derivation", "Step", "IdentityCheck", "ZeroStatus", "is_zero"]
