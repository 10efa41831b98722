"""Simulations in torch (with numpy/scipy): CUDA when present, CPU otherwise. Never imports sympy."""
from numerics.device import precision_flags, resolve_device, verification_precision
from numerics.random import make_generator, randn

__all__ = ["make_generator", "precision_flags", "randn", "resolve_device",
           "verification_precision"]
