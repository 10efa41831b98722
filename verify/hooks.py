"""What the kernel takes from the services built on it: handed down, never imported.

The kernel (the claim model, :class:`verify.run.Run`, the runner, the results) imports none of
the services above it (the store, the sweep engine, the check pool, the report). Two things it
needs from them come in through this module instead:

* **a sweeper** runs a claim's grid of training points for :meth:`verify.run.Run.sweep`. The
  runner receives one (``run_claim(..., sweeper=...)``); without one,
  :func:`verify.points.in_process_sweep` computes every point here and stores nothing.
  :func:`verify.sweep.stored_sweep` is the service's: points streamed into the results store
  (a rerun computes only what is missing), on a Dask cluster when ``check --backend dask`` asks
  for one. ``check``, the pytest plugin, ``stress`` and ``mutate`` hand it down.
* **an HTML renderer** for Jupyter's display of a claim and of a result: :mod:`verify.report`
  registers its own when imported (:func:`register_html`); until then the notebook shows
  the plain ``repr``.

>>> register_html("demo", lambda record: f"<b>{record['id']}</b>")
>>> render_html("demo", {"id": "li2.thm2"}), render_html("nothing registered", {})
('<b>li2.thm2</b>', None)
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

class Sweeper(Protocol):
    """``sweeper(fn, points, *, name, batch_size)``: ``fn``'s results at ``points``, in their
    order; raises ``RuntimeError`` naming the points that failed."""

    def __call__(self, fn: Callable[[Any], Any], points: Sequence[Mapping[str, Any]], *,
                 name: str, batch_size: int) -> list[dict[str, Any]]: ...


_HTML: dict[str, Callable[[dict[str, Any]], str]] = {}


def register_html(kind: str, render: Callable[[dict[str, Any]], str]) -> None:
    """Let ``render`` draw the Jupyter HTML of a ``kind`` (``"claim"``: the record of
    ``Claim.describe()``; ``"result"``: ``ClaimResult.as_record()``)."""
    _HTML[kind] = render


def render_html(kind: str, record: dict[str, Any]) -> str | None:
    """The registered HTML of ``record``, or None (Jupyter then shows the plain repr)."""
    render = _HTML.get(kind)
    return None if render is None else render(record)
