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

Each estimate says the machine state its seconds assume (``assumes``: "2 quiet cores", "2
cores at load 6.0", "one H100") and how busy that state kept each core (``contention``:
runnable threads per core, at least 1). :func:`for_load` scales a CPU estimate to this
machine's 1-minute load average now (:class:`Load`), since a claim's wall time grows with
the threads it shares its cores with (unscaled, an 88 s estimate was 5 times low on a loaded
machine). A store record does not say its load, so an estimate from this machine's store is
never scaled.

``check --dry-run`` prints the plan; ``check`` prints it before a run estimated above
:data:`CONFIRM_SECONDS` and asks for ``--yes``.

>>> e = estimate("li2.eq2", "quick", "cpu")
>>> e.source.startswith("shipped")
True
>>> e.assumes
'2 quiet cores'
>>> for_load(e, Load(one_minute=6.0, cores=2), runnable=2).seconds == 4 * e.seconds
True
>>> describe_seconds(4000.0), describe_seconds(7200.0)
('66.7 min', '2.0 h')
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

#: A run estimated above this needs ``--yes``: ten minutes, the longest a user would wait
#: without having chosen to (the default quick run of all 58 claims takes about one).
CONFIRM_SECONDS = 600.0
SHIPPED = Path(__file__).with_name("measured_times.json")


#: A machine state within this factor of the measured one leaves an estimate as it is: the
#: 1-minute load average moves by that much between two looks at a quiet machine.
SCALE_BAND = 1.25
#: The load average of a shipped entry marked ``loaded`` (measured_times.json: "a load
#: average of 5-10"): its middle.
LOADED_LOAD = 7.5


@dataclass(frozen=True)
class Estimate:
    """``seconds`` (None: unknown), whether it is a lower bound, where it comes from, the
    machine state it assumes and that state's runnable threads per core (None: not a CPU
    load, or not recorded); ``scaled`` says how it was scaled to the load now, if it was."""

    claim_id: str
    seconds: float | None
    source: str
    at_least: bool = False
    assumes: str = ""
    contention: float | None = None
    scaled: str = ""

    def text(self) -> str:
        if self.seconds is None:
            return "unknown"
        return (">= " if self.at_least else "~") + describe_seconds(self.seconds)

    def basis(self) -> str:
        """Where the estimate comes from and the machine state it holds for:
        ``shipped: measured, 2-core EPYC, 2026-11-21; on 2 quiet cores``, then the scaling."""
        return "; ".join(x for x in (self.source, self.assumes and f"on {self.assumes}",
                                     self.scaled) if x)


@dataclass(frozen=True)
class Load:
    """This machine's 1-minute load average and the cores this process may run on."""

    one_minute: float
    cores: int

    @classmethod
    def now(cls) -> Load:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # no affinity masks on this platform
            cores = os.cpu_count() or 1
        return cls(os.getloadavg()[0], max(1, cores))

    def contention(self, runnable: int) -> float:
        """Runnable threads per core once a run adds ``runnable`` threads to the load."""
        return max(1.0, (self.one_minute + runnable) / self.cores)

    def text(self) -> str:
        return f"load {self.one_minute:.1f} on {self.cores} cores now"


def _state(cores: Any, load: float | None) -> tuple[str, float | None]:
    """The text and runnable threads per core of ``cores`` at a 1-minute ``load`` (None:
    quiet); no state when the cores are not known."""
    if not isinstance(cores, int) or cores < 1:
        return "", None
    if load is None or load <= cores:
        return f"{cores} quiet cores" + (f" (load {load:.1f})" if load else ""), 1.0
    return f"{cores} cores at load {load:.1f}", load / cores


def for_load(e: Estimate, load: Load, runnable: int) -> Estimate:
    """``e`` scaled to ``load`` with ``runnable`` threads of this run added, when the
    contention now differs from the one ``e`` was measured at by more than
    :data:`SCALE_BAND`; ``e`` itself otherwise, and when it has no CPU state to scale."""
    if e.seconds is None or e.contention is None:
        return e
    factor = load.contention(runnable) / e.contention
    if 1 / SCALE_BAND <= factor <= SCALE_BAND:
        return e
    return replace(e, seconds=e.seconds * factor,
                   scaled=f"x{factor:.1f} for the {load.text()}")


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
    load = p.get("load") or {}
    # made by --from: the load given; made by `reference ID`: the load when it started
    assumes, contention = _state((p.get("machine") or {}).get("cores"),
                                 load.get("1min", (load.get("before") or {}).get("1min")))
    # a run resumed from stored training points costs, from scratch, those points' seconds too
    stored = float((p.get("sweep_points") or {}).get("reused_seconds", 0.0))
    return Estimate(claim_id, float(p["wall_seconds"]) + stored, f"reference result: measured"
                    f"{' with its stored points' if stored else ''}, {ref.made}",
                    assumes=assumes, contention=contention)


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
        return Estimate(claim_id, seconds, "this machine's store",
                        assumes="this machine, at that run's load (not recorded)")
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
    return Estimate(claim_id, float(entry["seconds"]), f"shipped: {kind}, {table['label']}",
                    bool(entry.get("at_least")), *_shipped_state(table, entry))


def _shipped_state(table: dict[str, Any], entry: dict[str, Any]) -> tuple[str, float | None]:
    """The state a shipped entry assumes: CPU seconds are a core per thread, no waiting;
    ``loaded`` wall times were measured at :data:`LOADED_LOAD`; the rest on quiet cores; a
    GPU table's label names its device (not scaled by the CPUs' load)."""
    cores = table.get("cores")
    if cores is None:
        return table["label"].split(",")[0], None
    if entry.get("cpu"):
        return "a core per thread, no waiting (CPU seconds)", 1.0
    return _state(cores, LOADED_LOAD if entry.get("loaded") else None)


def total(estimates: Sequence[Estimate], jobs: int = 1) -> tuple[float, int]:
    """Known seconds summed and spread over ``jobs`` processes (never below the longest
    claim), and how many claims have no estimate."""
    known = [e.seconds for e in estimates if e.seconds is not None]
    spread = max(sum(known) / max(jobs, 1), max(known, default=0.0))
    return spread, len(estimates) - len(known)


def plan_lines(estimates: Sequence[Estimate], *, fidelity: str, device_type: str,
               jobs: int, load: Load | None = None) -> list[str]:
    """The plan as printed by ``check --dry-run``: one line per claim, then the total, which
    names the ``load`` the estimates were scaled to (given for a CPU run)."""
    width = max((len(e.claim_id) for e in estimates), default=0)
    lines = [f"{e.claim_id:<{width}}  {e.text():>10}  ({e.basis()})" for e in estimates]
    seconds, unknown = total(estimates, jobs)
    lines.append(f"{len(estimates)} claim(s) at {fidelity} fidelity on {device_type}, "
                 f"{jobs} process(es): about {describe_seconds(seconds)}"
                 + (f" plus {unknown} claim(s) with no estimate" if unknown else "")
                 + (f", at the {load.text()}" if load is not None else ""))
    return lines
