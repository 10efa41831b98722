r"""Simulations in torch (with numpy/scipy), never sympy; CUDA when present, CPU otherwise: the
core's public API.

The core, for any paper (each paper's simulations live in :mod:`numerics.li2`,
:mod:`numerics.ns`):

* devices and precision: :func:`resolve_device`, :func:`verification_precision` (float64
  matmuls, TF32 off), :func:`precision_flags`;
* seeded draws that never touch torch's global RNG: :func:`make_generator`, :func:`randn`;
* integrators of batched ODEs: :func:`integrate` (fixed step, Euler/Heun/RK4, per-entry steps),
  :func:`integrate_to_rest`, :mod:`numerics.events` (to an event),
  :mod:`numerics.adaptive_integrators`; a run that goes non-finite raises :class:`Diverged`;
* step-halving studies: :func:`observed_order`, :func:`richardson_error`, :func:`sign_changes`;
* fits and roots: :mod:`numerics.slopes` (log-log slopes, exponential rates),
  :mod:`numerics.bisection` (batched bisection);
* :mod:`numerics.sphere` (Riemannian gradient and Hessian on the unit sphere),
  :mod:`numerics.polar` (polar factors, nuclear norm, Newton-Schulz),
  :mod:`numerics.optimizers` (batched first-order optimisers), :mod:`numerics.activations`,
  :mod:`numerics.penalised_least_squares` (reference minimisers), :mod:`numerics.solves`
  (linear solves: Cholesky for positive definite systems, batched LU safe with several
  threads).

RK4 on :math:`\dot y = -y` has global error :math:`O(h^4)`: halving the step divides it by 16.

>>> import torch
>>> from numerics import integrate, observed_order
>>> y0 = torch.ones(1, dtype=torch.float64)
>>> exact = torch.exp(-y0)
>>> errors = torch.stack([(integrate(lambda t, y: -y, y0, dt=1 / n, steps=n).final - exact).abs()[0]
...                       for n in (8, 16, 32)])
>>> round(float(observed_order(errors)))
4
"""
from numerics.device import precision_flags, resolve_device, verification_precision
from numerics.errors import Diverged
from numerics.integrators import integrate, integrate_to_rest
from numerics.random import make_generator, randn
from numerics.step_studies import observed_order, richardson_error, sign_changes

__all__ = ["Diverged", "integrate", "integrate_to_rest", "make_generator", "observed_order",
           "precision_flags", "randn", "resolve_device", "richardson_error", "sign_changes",
           "verification_precision"]
