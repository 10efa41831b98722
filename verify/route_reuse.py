"""Reuse a route's evidence between a claim's run and its negative control's run when the
stated forms that route uses are the same functions in both (the control swaps others).

A route here is a generator of evidence that reads ``run.stated`` only through the names it
declares; everything else it computes is a pure function of the key, the claim, seed, dtype
and device. What it leaves on the run (derivations, figures, data assumptions) is recorded
with its evidence and replayed onto the second run.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from verify.evidence import Evidence, to_json_value
from verify.run import Run


@dataclass(frozen=True)
class _Record:
    evidence: tuple[Evidence, ...]
    derivations: tuple
    figures: tuple[tuple[str, Any], ...]
    assumptions: tuple


_ROUTES: OrderedDict[Hashable, _Record] = OrderedDict()
_SIZE = 64


def reused_route(run: Run, key: Hashable, uses: Sequence[str],
                 route: Callable[[], Iterator[Evidence]]) -> Iterator[Evidence]:
    """The evidence of ``route()``, computed once per (``key``, claim, fidelity, parameters,
    seed, dtype, device, the stated functions named in ``uses``) and replayed, with what it
    left on the run, after. The parameters are part of the key because one process may run a
    claim at several settings (``check --set``, ``verify stress``, tests)."""
    full = (key, run.claim_id, run.fidelity,
            json.dumps(to_json_value(dict(run.params)), sort_keys=True), run.seed,
            str(run.dtype), str(run.device), tuple(run.stated[name] for name in uses))
    if full in _ROUTES:
        _ROUTES.move_to_end(full)
        record = _ROUTES[full]
        run.derivations.extend(record.derivations)
        run.figures.update(record.figures)
        run.data_assumptions.extend(record.assumptions)
        return iter(record.evidence)
    derivations, assumptions = len(run.derivations), len(run.data_assumptions)
    figures = dict(run.figures)
    evidence = tuple(route())
    _ROUTES[full] = _Record(
        evidence, tuple(run.derivations[derivations:]),
        tuple((k, v) for k, v in run.figures.items() if k not in figures or figures[k] is not v),
        tuple(run.data_assumptions[assumptions:]))
    while len(_ROUTES) > _SIZE:
        _ROUTES.popitem(last=False)
    return iter(evidence)
