"""Run a claim's check (and its negative control) and turn the evidence into a verdict."""
from __future__ import annotations

import contextlib
import math
import numbers
import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch

from numerics.device import resolve_device, verification_precision
from numerics.errors import Diverged
from verify.bounds import footprint_problem, value_at
from verify.claim import FIDELITIES, Claim, Reading, SkipClaim
from verify.evidence import Evidence
from verify.hooks import Sweeper
from verify.points import in_process_sweep
from verify.results import ClaimResult, ControlResult, ReadingResult
from verify.run import AssumptionOutcome, Run
from verify.verdict import Verdict, apply_negative_control, apply_ran, verdict_from_evidence

DTYPES = {"float64": torch.float64, "float32": torch.float32}
#: Default per-claim time limit in CPU seconds (of the claim's process, all its threads), by
#: fidelity (``check --time-limit`` overrides it). CPU, not wall: on a loaded machine a claim
#: gets a fraction of a core (medium li2.fig3 ran out of a 1800 s wall limit with 3.3
#: CPU-minutes done), and that must not turn its verdict into an error.
#: quick: the slowest quick claim takes 8 s on 2 CPU cores (li2.sec7-predictions; the whole
#: quick run 65-90 s, verify/measured_times.json), but li2.thm6-training took 285 s there with
#: --threads 2 at a load average of 11 (two threads on busy cores wait on each other), so 600 s
#: leaves a factor of 2 over the worst seen and still ends a hang in minutes. full: on 2 cores
#: the non-training claims take at most 10 min (li2.thm2, li2.thm6 and ns.fig3-path were
#: stopped there, unmeasured), and the slowest on an H100 took 106 s (li2.thm6-training).
#: medium: the training claims' medium levels take 2-5 CPU-minutes each (measured, verify/
#: measured_times.json); 30 min bounds a hang with a factor of 6 over them. full: the paper-
#: size designs are to finish in 3 hours on 2 cores (issue 28), 6 CPU-hours with two threads.
TIME_LIMITS = {"quick": 600.0, "medium": 1800.0, "full": 21600.0}
#: A claim that waits without computing (a native call that hangs, a sweep on another
#: machine) accrues no CPU: it is stopped after this many times its limit in wall seconds. A
#: loaded 2-core machine gave a one-thread claim a quarter of a core (load average 8,
#: measured 2026-12-07), so 6 leaves room beyond that.
WALL_FACTOR = 6.0
#: Seeds are in [0, SEED_LIMIT) (they are mixed into 64-bit generator seeds).
SEED_LIMIT = 2**63


def parse_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"dtype: {name!r} is not one of {', '.join(DTYPES)}")
    return DTYPES[name]


class ParameterError(ValueError):
    """An override that does not fit the parameter the claim declares (one line)."""


def _kind(x: Any) -> str:
    if x is None:
        return "none"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, numbers.Real):
        return "number"
    if isinstance(x, str):
        return "str"
    if isinstance(x, Mapping):
        return "map"
    if isinstance(x, (list, tuple)):
        return "seq"
    return "other"


def _short(x: Any, limit: int = 48) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _shown(x: Any) -> str:
    if isinstance(x, str):
        return f"the string {_short(x)}"
    if isinstance(x, (list, tuple)):
        return f"the {type(x).__name__} {_short(x)}"
    return _short(x)


def _is_group_key(key: str) -> bool:
    return key in ("group", "groups") or key.endswith(("_group", "_groups"))


def _group_name_problem(text: str) -> str | None:
    """Why ``text`` is not a group name (None when it is one): :mod:`theory.groups.names`."""
    from theory.groups import check_group_name

    try:
        check_group_name(text)
    except ValueError as exc:
        return str(exc).removeprefix("group: ")
    return None


def _finite_everywhere(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(f"{path} must be finite, not {value!r}")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _finite_everywhere(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite_everywhere(v, f"{path}[{i}]")


def _conform(value: Any, declared: Sequence[Any], path: str, key: str) -> Any:
    """``value`` checked against the values ``declared`` for it (every fidelity's default,
    or every element of a declared sequence): the same type and shape; raises
    :class:`ParameterError` naming ``path`` and what is allowed."""
    present = [d for d in declared if d is not None]
    if value is None:
        if len(present) < len(declared):
            return None
    if not present:  # declared None only: any finite literal
        _finite_everywhere(value, path)
        return value
    kinds = {_kind(d) for d in present}

    def bad(allowed: str) -> ParameterError:
        return ParameterError(f"{path} must be {allowed}, not {_shown(value)}")

    if kinds == {"bool"}:
        if not isinstance(value, bool):
            raise bad("True or False")
        return value
    if kinds == {"number"}:
        if all(isinstance(d, int) for d in present):
            low = 1 if min(present) >= 1 else 0 if min(present) >= 0 else None
            rule = {1: "an integer >= 1 (sizes are >= 1 unless the declared value is 0)",
                    0: "an integer >= 0", None: "an integer"}[low]
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad(rule)
            if low is not None and value < low:
                raise bad(rule)
            return value
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise bad("a finite number")
        if not math.isfinite(float(value)) and all(math.isfinite(float(d)) for d in present):
            raise bad("a finite number")
        return value
    if kinds == {"str"}:
        if not isinstance(value, str):
            raise bad("a string")
        if _is_group_key(key) and all(_group_name_problem(d) is None for d in present):
            problem = _group_name_problem(value)
            if problem:
                raise ParameterError(f"{path} must be a group name: {problem}")
        return value
    if kinds == {"map"}:
        if not isinstance(value, Mapping):
            raise bad("a dict with keys " + ", ".join(map(str, present[0])))
        keys = list(dict.fromkeys(k for d in present for k in d))
        unknown = [k for k in value if k not in keys]
        if unknown:
            raise ParameterError(f"{path}: {unknown[0]!r} is not a key of it (keys: "
                                 f"{', '.join(map(str, keys))})")
        # a dict whose keys change between fidelities and whose values are all of one kind
        # is a collection (li2.fig5's panels of groups), not a record: any subset of its
        # keys is a valid choice; a record must give each key every fidelity gives
        values = [_kind(v) for d in present for v in d.values()]
        collection = len({frozenset(d) for d in present}) > 1 and len(set(values)) == 1
        required = [] if collection else [k for k in keys if all(k in d for d in present)]
        missing = [k for k in required if k not in value]
        if missing:
            raise ParameterError(f"{path} must give every key ({', '.join(map(str, keys))}); "
                                 f"{missing[0]!r} is missing")
        return {k: _conform(v, [d[k] for d in present if k in d], f"{path}.{k}", str(k))
                for k, v in value.items()}
    if kinds == {"seq"}:
        kind = "a tuple" if isinstance(present[0], tuple) else "a list"
        if not isinstance(value, (list, tuple)):
            raise bad(f"{kind} (written ('a', 'b') or (1,); a single value is not split)")
        elements = [e for d in present for e in d]
        if len({_kind(e) for e in elements} - {"none"}) <= 1:  # items of one kind
            # an empty sequence is allowed: it turns that part of a check off (tests do),
            # except a claim's own groups: a check over no group checks nothing
            if not value and key == "groups" and {_kind(e) for e in elements} == {"str"}:
                raise bad(f"{kind} of at least one group name")
            items = [_conform(v, elements, f"{path}[{i}]", key) if elements else v
                     for i, v in enumerate(value)]
        else:  # a record of positions, e.g. (group, levels)
            length = len(present[0])
            if any(len(d) != length for d in present):
                _finite_everywhere(value, path)
                return value
            if len(value) != length:
                raise bad(f"{kind} of {length} items")
            items = [_conform(v, [d[i] for d in present], f"{path}[{i}]", key)
                     for i, v in enumerate(value)]
        return type(present[0])(items) if all(type(d) is type(present[0]) for d in present) \
            else type(value)(items)
    _finite_everywhere(value, path)  # mixed declarations: accept, but finite
    return value


def _conform_dotted(claim: Claim, name: str, value: Any, known: Sequence[str]) -> Any:
    """A dotted override ``a.b.c``: ``a`` a parameter, ``b``, ``c`` keys of its dicts; the
    value checked against the leaf every fidelity declares there."""
    head, *path = name.split(".")
    if head not in known:
        raise ParameterError(f"{head!r} is not a parameter of {claim.id} (parameters: "
                             f"{', '.join(known) or 'none'})")
    declared = [claim.parameters[f][head] for f in FIDELITIES if head in claim.parameters[f]]
    where = head
    for key in path:
        maps = [d for d in declared if isinstance(d, Mapping)]
        if not maps:
            raise ParameterError(f"{where} is not a dict, so {name} names nothing")
        keys = list(dict.fromkeys(k for d in maps for k in d))
        if key not in keys:
            raise ParameterError(f"{where}: {key!r} is not a key of it (keys: "
                                 f"{', '.join(map(str, keys))})")
        declared = [d[key] for d in maps if key in d]
        where = f"{where}.{key}"
    return _conform(value, declared, name, path[-1])


def merge_overrides(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (a fidelity's parameters) with ``overrides`` applied: a dotted name ``a.b``
    replaces key ``b`` in a copy of the dict ``a``, so one field of a nested setting can be
    varied (by ``--set training.K=64`` or a stress dimension) without restating the rest.

    >>> merge_overrides({"n": 2, "training": {"K": 8, "lr": 0.1}}, {"training.K": 64})
    {'n': 2, 'training': {'K': 64, 'lr': 0.1}}
    """
    merged = dict(base)
    plain = {k: v for k, v in overrides.items() if "." not in str(k)}
    merged.update(plain)
    for name, value in overrides.items():
        if "." not in str(name):
            continue
        head, *path = str(name).split(".")
        if head in plain:
            raise ParameterError(f"{name} and {head} are both given; give one of them")
        node = merged[head] = dict(merged.get(head) or {})
        for key in path[:-1]:
            node[key] = dict(node.get(key) or {})
            node = node[key]
        node[path[-1]] = value
    return merged


def validate_overrides(claim: Claim, overrides: Mapping[str, Any] | None, *,
                       fidelity: str | None = None,
                       time_limit: float | None = None) -> dict[str, Any]:
    """``overrides`` checked against the parameters ``claim`` declares, before any work.

    Each value must have the type and shape of the declared default (of either fidelity): an
    integer stays an integer (>= 1 where every declared value is >= 1, >= 0 where one is 0),
    a float is finite, a string stays a string, a tuple stays a tuple whose items have the
    declared items' type (a string is not split into letters), a dict gives the declared
    keys; group names (``group``, ``groups``, ``*_groups``) must parse, and ``groups`` names
    at least one. Each value then lies inside the claim's ``bounds`` (:mod:`verify.bounds`).
    Given the ``fidelity``, the overrides merged into its parameters must fit the claim's
    footprint: its arrays within this machine's memory and, given ``time_limit`` (CPU
    seconds), its work within that. Raises :class:`ParameterError` (a ``ValueError``) with
    one line naming the parameter; returns the overrides (sequences in the declared
    container type)."""
    if not overrides:
        return {}
    if not isinstance(overrides, Mapping):
        raise ParameterError(f"overrides: {_shown(overrides)} is not a dict of parameters")
    known = list(dict.fromkeys(k for f in FIDELITIES for k in claim.parameters[f]))
    checked = {}
    for name, value in overrides.items():
        if isinstance(name, str) and "." in name:
            checked[name] = _conform_dotted(claim, name, value, known)
        elif name not in known:
            raise ParameterError(f"{name!r} is not a parameter of {claim.id} (parameters: "
                                 f"{', '.join(known) or 'none'})")
        else:
            declared = [claim.parameters[f][name] for f in FIDELITIES
                        if name in claim.parameters[f]]
            checked[name] = _conform(value, declared, name, name)
        _check_bounds(claim, name, checked[name])
    if fidelity is not None:
        _check_footprint(claim, checked, fidelity, time_limit)
    return checked


def _check_bounds(claim: Claim, name: str, value: Any) -> None:
    """``value`` (the override of ``name``) inside every bound at or below ``name``."""
    for path, bound in claim.bounds.items():
        if path == name:
            inner = value
        elif path.startswith(name + "."):   # a whole dict given: its bounded keys
            inner = value_at(value, path[len(name) + 1:])
        else:
            continue
        problem = bound.problem(inner)
        if problem:
            why = f" ({bound.why})" if bound.why else ""
            raise ParameterError(f"{path} {problem}, not {_short(inner)}{why}")


def _check_footprint(claim: Claim, overrides: Mapping[str, Any], fidelity: str,
                     time_limit: float | None) -> None:
    """The run's arrays and work, where an override enters them, within the machine's
    memory and ``time_limit``; else one line naming the overrides and the estimate."""
    names = claim.footprint.names()
    given = [k for k in overrides
             if any(n == k or n.startswith(k + ".") or k.startswith(n + ".") for n in names)]
    if not given:
        return
    params = merge_overrides(claim.parameters[fidelity], overrides)
    problem = footprint_problem(claim.footprint, params,
                                None if time_limit == math.inf else time_limit)
    if problem:
        shown = ", ".join(f"{k}={_short(overrides[k])}" for k in given)
        raise ParameterError(f"{shown} at {fidelity} fidelity {problem}")


def check_seed(seed: Any) -> int:
    """``seed`` when it is an integer in [0, 2**63); else ValueError naming ``seed``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"seed: {seed!r} must be an integer in [0, 2**63)")
    return seed


def _execute(claim: Claim, run: Run) -> tuple[list[Evidence], Verdict | None, str]:
    """Run the check; an exception becomes a verdict (skipped, inconclusive, error)."""
    try:
        evidence = list(claim.check(run))
    except SkipClaim as exc:
        return [], Verdict.SKIPPED, str(exc)
    except Diverged as exc:
        return [], Verdict.INCONCLUSIVE, f"simulation diverged: {exc}"
    return evidence, None, ""


class ClaimTimeLimit(BaseException):
    """A claim ran past its time limit. A ``BaseException``, as ``KeyboardInterrupt`` is: a
    check's own ``except Exception`` must not swallow it."""


def time_limit_reason(seconds: float, claim_id: str, wall: bool = False) -> str:
    """The reason of a claim stopped by its limit: its CPU seconds ran out, or (``wall``) it
    waited :data:`WALL_FACTOR` times as long without using them."""
    if wall:
        return (f"time limit of {seconds:g} CPU-s exceeded in wall time ({claim_id}: "
                f"{WALL_FACTOR * seconds:g} s passed with fewer CPU seconds used: waiting)")
    return f"time limit of {seconds:g} CPU-s exceeded ({claim_id})"


def lost_worker_reason(claim_id: str, how: str) -> str:
    return f"worker process lost twice running {claim_id} (the last {how})"


_INTERRUPTED = re.compile(r"time limit of \S+ CPU-s exceeded|worker process lost twice running ")


def interrupted(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is an ``error`` of the run rather than of the claim (its time limit
    ran out, its worker was lost): not a result to store for the claim's key."""
    return (record.get("verdict") == Verdict.ERROR.value
            and _INTERRUPTED.match(record.get("reason") or "") is not None)


@contextlib.contextmanager
def _time_limit(seconds: float | None, claim_id: str) -> Iterator[None]:
    """Raise :class:`ClaimTimeLimit` in the main thread once the process has used ``seconds``
    CPU seconds (all its threads) from here, or :data:`WALL_FACTOR` times ``seconds`` have
    passed on the clock.

    A watchdog thread reads the process's CPU clock and sends SIGUSR1 to the main thread, whose
    handler raises at the next bytecode (a blocking system call is interrupted): a check
    looping in Python stops there, but one native call that never returns (a hung MKL routine)
    is not cut; the workers of ``check --jobs N`` are killed for that (:mod:`verify.check_pool`).
    SIGALRM stays with the symbolic steps' own limits (``theory.identity.time_limit``), which
    reset the interval timer. Off the main thread or without ``pthread_kill`` (Windows): no
    limit."""
    if (seconds is None or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "pthread_kill")):
        yield
        return
    armed, why = [True], [time_limit_reason(seconds, claim_id)]

    def expire(signum, frame):  # noqa: ARG001
        if armed[0]:
            armed[0] = False
            raise ClaimTimeLimit(why[0])

    stop = threading.Event()
    cpu0, wall0 = time.process_time(), time.monotonic()

    def watch() -> None:
        while True:
            cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
            if cpu >= seconds or wall >= WALL_FACTOR * seconds:
                why[0] = time_limit_reason(seconds, claim_id, wall=cpu < seconds)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
                return
            # the CPU clock runs at most (cores) times the wall clock: look again before the
            # limit can have passed, at most every second
            soon = min(seconds - cpu, WALL_FACTOR * seconds - wall) / (os.cpu_count() or 1)
            if stop.wait(min(1.0, max(soon, 0.01))):
                return

    previous = signal.signal(signal.SIGUSR1, expire)
    watchdog = threading.Thread(target=watch, daemon=True, name="claim time limit")
    watchdog.start()
    try:
        yield
    finally:
        armed[0] = False
        stop.set()
        watchdog.join()   # a signal already sent lands while `expire` is still the handler
        signal.signal(signal.SIGUSR1, previous)


def _parameter_assumptions(claim: Claim, params: Mapping[str, Any]) -> list[AssumptionOutcome]:
    return [AssumptionOutcome(a.name, a.description, bool(a.holds(params)), "parameters")
            for a in claim.assumptions]


def error_result(claim: Claim, *, fidelity: str, device: str | torch.device,
                 dtype: str | torch.dtype, seed: int, overrides: Mapping[str, Any] | None,
                 reason: str, seconds: float = 0.0, error: str | None = None) -> ClaimResult:
    """An ``error`` result for ``claim`` whose run was lost (a time limit, a lost worker):
    its parameters and parameter assumptions, no evidence."""
    params = merge_overrides(claim.parameters[fidelity], overrides or {})
    return ClaimResult(
        claim=claim.describe(), fidelity=fidelity, parameters=params, seed=seed,
        device=str(device), dtype=str(dtype).removeprefix("torch."), verdict=Verdict.ERROR,
        reason=reason, seconds=seconds, assumptions=_parameter_assumptions(claim, params),
        error=error)


def run_claim(
    claim: Claim,
    *,
    fidelity: str = "quick",
    device: str | torch.device = "auto",
    dtype: str | torch.dtype = "float64",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    control: bool = True,
    readings: bool = True,
    time_limit: float | None = None,
    sweeper: Sweeper = in_process_sweep,
) -> ClaimResult:
    """Check ``claim`` and, unless ``control=False``, its negative control; unless
    ``readings=False``, check it again under each of its alternative readings
    (:class:`verify.claim.Reading`), which get a verdict each (the claim's stays the printed
    reading's).

    The verdict is computed from the evidence. A check that raises gives ``error`` with the
    traceback recorded; so does one still running (check and control together) after
    ``time_limit`` seconds, with the reason ``time limit of N s exceeded (ID)`` (see
    :func:`_time_limit` for what the limit can stop); bad arguments (fidelity, dtype other
    than float64/float32, device, a seed outside [0, 2**63), overrides that
    :func:`validate_overrides` refuses, a time limit not in (0, inf)) raise ``ValueError``
    before any work. ``sweeper`` runs the claim's training grids (:meth:`Run.sweep`); the
    default computes them in this process and stores nothing, ``check`` hands down
    :func:`verify.sweep.stored_sweep` (:mod:`verify.hooks`).
    """
    if time_limit is not None and not 0 < time_limit < math.inf:
        raise ValueError(f"time_limit: {time_limit!r} must be a finite number of seconds > 0 "
                         f"(None: no limit)")
    if fidelity not in FIDELITIES:
        raise ValueError(f"fidelity: {fidelity!r} is not one of {', '.join(FIDELITIES)}")
    check_seed(seed)
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPES.values():
            raise ValueError(f"dtype: {dtype} is not one of torch.float64, torch.float32")
        dt = dtype
    else:
        dt = parse_dtype(dtype)
    try:
        overrides = validate_overrides(claim, overrides, fidelity=fidelity,
                                       time_limit=time_limit)
    except ParameterError as exc:
        raise ParameterError(f"overrides: {exc}") from None
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    verification_precision()
    params = merge_overrides(claim.parameters[fidelity], overrides)
    assumptions = _parameter_assumptions(claim, params)

    start = time.perf_counter()
    try:
        with _time_limit(time_limit, claim.id):
            return _check_and_control(claim, fidelity=fidelity, params=params,
                                      assumptions=assumptions, seed=seed, device=dev, dtype=dt,
                                      control=control, readings=readings, sweeper=sweeper)
    except ClaimTimeLimit as exc:
        return error_result(claim, fidelity=fidelity, device=dev, dtype=dt, seed=seed,
                            overrides=overrides, reason=str(exc),
                            seconds=time.perf_counter() - start, error=traceback.format_exc())


def _check_and_control(claim: Claim, *, fidelity: str, params: dict[str, Any],
                       assumptions: list[AssumptionOutcome], seed: int, device: torch.device,
                       dtype: torch.dtype, control: bool, readings: bool,
                       sweeper: Sweeper) -> ClaimResult:
    """:func:`run_claim`'s work once its arguments are checked."""
    def make_run(stated: Mapping[str, Callable[..., Any]], is_control: bool,
                 reading: Reading | None = None) -> Run:
        return Run(claim_id=claim.id, fidelity=fidelity,
                   params=params if reading is None else merge_overrides(params,
                                                                         reading.parameters),
                   stated=stated, seed=seed, device=device, dtype=dtype, is_control=is_control,
                   memo_params=params if reading is not None and reading.compares_only
                   else None, sweeper=sweeper)

    start = time.perf_counter()
    run = make_run(claim.stated, False)
    error = None
    try:
        evidence, forced, reason = _execute(claim, run)
    except Exception:  # noqa: BLE001 - any failure of a check is reported, not raised
        evidence, forced = [], Verdict.ERROR
        error = traceback.format_exc()
        reason = error.strip().splitlines()[-1]
    verdict, why = (forced, reason) if forced else verdict_from_evidence(evidence)
    verdict, why = apply_ran(verdict, why, [a for a in run.data_assumptions
                                            if a.source == "ran" and not a.holds])

    control_result = None
    if control and forced is None:
        ctl_run = make_run({**claim.stated, **claim.control.stated}, True)
        try:
            ctl_evidence, ctl_forced, ctl_reason = _execute(claim, ctl_run)
            ctl_verdict, ctl_why = ((ctl_forced, ctl_reason) if ctl_forced
                                    else verdict_from_evidence(ctl_evidence))
        except Exception:  # noqa: BLE001
            ctl_evidence, ctl_verdict = [], Verdict.ERROR
            ctl_why = traceback.format_exc().strip().splitlines()[-1]
        rejected = ctl_verdict is Verdict.FAIL
        control_result = ControlResult(claim.control.description, rejected, ctl_verdict,
                                       ctl_why, ctl_evidence)
        verdict, why = apply_negative_control(verdict, why, rejected)

    reading_results = None
    if readings and forced is None and claim.readings:
        reading_results = [_check_reading(claim, r, make_run({**claim.stated, **r.stated},
                                                             False, r))
                           for r in claim.readings]

    return ClaimResult(
        claim=claim.describe(), fidelity=fidelity, parameters=params, seed=seed,
        device=str(device), dtype=str(dtype).removeprefix("torch."), verdict=verdict, reason=why,
        seconds=time.perf_counter() - start, evidence=evidence,
        assumptions=assumptions + run.data_assumptions, control=control_result,
        derivations=[{"title": d.title, "steps": d.as_records()} for d in run.derivations],
        figures=run.figures, error=error, readings=reading_results)


def _check_reading(claim: Claim, reading: Reading, run: Run) -> ReadingResult:
    """One alternative reading's verdict: the check's evidence under the reading's
    parameters and stated forms, with the simulation's health applied as for the claim."""
    try:
        evidence, forced, reason = _execute(claim, run)
    except Exception:  # noqa: BLE001 - a reading that breaks is reported, not raised
        evidence, forced = [], Verdict.ERROR
        reason = traceback.format_exc().strip().splitlines()[-1]
    verdict, why = (forced, reason) if forced else verdict_from_evidence(evidence)
    verdict, why = apply_ran(verdict, why, [a for a in run.data_assumptions
                                            if a.source == "ran" and not a.holds])
    return ReadingResult(reading.name, reading.description, dict(reading.parameters),
                         verdict, why, evidence, run.data_assumptions)
