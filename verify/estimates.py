"""How long a check will take, said before it starts.

An estimate of one claim at one fidelity on one kind of device comes from, in order:

1. this machine's results store: the newest stored run of the claim at that fidelity and
   device type (its recorded ``seconds``), since the same machine is the best predictor;
2. the claim's committed reference result (:mod:`verify.references`), made at full fidelity
   on the CPU machine its provenance names: its wall seconds;
3. the measurements shipped with the toolkit (``verify/measured_times.json``: quick fidelity
   on 2 CPU cores, full fidelity on 2 CPU cores where it was measured, full fidelity on one
   H100), each with the machine it ran on; a run that was stopped gives a lower bound, and
   a training claim too large to run gives the trainer's extrapolated cost; at medium
   fidelity a claim without its own medium level is estimated at its quick level;
4. nothing: the estimate is unknown, and said so.

``check --dry-run`` prints the plan; ``check`` prints it before a run estimated above
:data:`CONFIRM_SECONDS` and asks for ``--yes``.

>>> e = estimate("li2.eq2", "quick", "cpu")
>>> e.source.startswith("shipped")
True
>>> describe_seconds(4000.0), describe_seconds(7200.0)
('66.7 min', '2.0 h')
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: A run estimated above this needs ``--yes``: ten minutes, the longest a user would wait
#: without having chosen to (the default quick run of all 58 claims takes about one).
CONFIRM_SECONDS = 600.0
SHIPPED = Path(__file__).with_name("measured_times.json")


@dataclass(frozen=True)
class Estimate:
    """``seconds`` (None: unknown), whether it is a lower bound, and where it comes from."""

    claim_id: str
    seconds: float | None
    source: str
    at_least: bool = False

    def text(self) -> str:
        if self.seconds is None:
            return "unknown"
        return (">= " if self.at_least else "~") + describe_seconds(self.seconds)


def describe_seconds(seconds: float) -> str:
    """``seconds`` in the unit a person reads: s, min, h or days."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


@lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


def _from_store(store: Any, claim_id: str, fidelity: str, device_type: str) -> float | None:
    if store is None:
        return None
    for stored in reversed(list(store.history(claim_id))):      # newest first
        record = stored.record
        if (record.get("fidelity") == fidelity
                and str(record.get("device", "")).split(":")[0] == device_type
                and record.get("verdict") not in ("error", "skipped")
                and isinstance(record.get("seconds"), (int, float))):
            return float(record["seconds"])
    return None


def _from_reference(claim_id: str, fidelity: str, device_type: str) -> Estimate | None:
    from verify import references

    try:
        ref = references.load(claim_id)
    except references.ReferenceError:
        return None
    if ref is None or ref.fidelity != fidelity or ref.provenance.get("device") != device_type:
        return None
    p = ref.provenance
    machine = p.get("machine") or {}
    return Estimate(claim_id, float(p["wall_seconds"]),
                    f"reference result: measured, {machine.get('cores')} cores, {ref.made}")


def _own_medium(claim_id: str) -> bool:
    from verify import registry

    try:
        return registry.get(claim_id).has_own_medium
    except registry.UnknownClaim:
        return False


def estimate(claim_id: str, fidelity: str, device_type: str, store: Any = None) -> Estimate:
    """The estimate of one claim (see the module docstring for the order of sources)."""
    seconds = _from_store(store, claim_id, fidelity, device_type)
    if seconds is not None:
        return Estimate(claim_id, seconds, "this machine's store")
    reference = _from_reference(claim_id, fidelity, device_type)
    if reference is not None:
        return reference
    table = _shipped().get(fidelity, {}).get(device_type)
    entry = (table or {}).get("claims", {}).get(claim_id)
    if entry is None and fidelity == "medium" and not _own_medium(claim_id):
        return estimate(claim_id, "quick", device_type, store)   # medium runs its quick level
    if entry is None:
        return Estimate(claim_id, None, "no measurement")
    kind = ("extrapolated from the trainer's per-epoch cost" if entry.get("model")
            else "stopped there" if entry.get("at_least") else "measured")
    return Estimate(claim_id, float(entry["seconds"]),
                    f"shipped: {kind}, {table['label']}", bool(entry.get("at_least")))


def total(estimates: Sequence[Estimate], jobs: int = 1) -> tuple[float, int]:
    """Known seconds summed and spread over ``jobs`` processes (never below the longest
    claim), and how many claims have no estimate."""
    known = [e.seconds for e in estimates if e.seconds is not None]
    spread = max(sum(known) / max(jobs, 1), max(known, default=0.0))
    return spread, len(estimates) - len(known)


def plan_lines(estimates: Sequence[Estimate], *, fidelity: str, device_type: str,
               jobs: int) -> list[str]:
    """The plan as printed by ``check --dry-run``: one line per claim, then the total."""
    width = max((len(e.claim_id) for e in estimates), default=0)
    lines = [f"{e.claim_id:<{width}}  {e.text():>10}  ({e.source})" for e in estimates]
    seconds, unknown = total(estimates, jobs)
    lines.append(f"{len(estimates)} claim(s) at {fidelity} fidelity on {device_type}, "
                 f"{jobs} process(es): about {describe_seconds(seconds)}"
                 + (f" plus {unknown} claim(s) with no estimate" if unknown else ""))
    return lines
