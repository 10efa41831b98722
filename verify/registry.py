"""The claim registry: ids (and aliases) to claims, and selection by id or glob."""
from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from collections.abc import Iterable

from verify.claim import Claim

_CLAIMS: dict[str, Claim] = {}
_ALIASES: dict[str, str] = {}


class UnknownClaim(LookupError):
    """No registered claim has this id or matches this pattern."""


def register(claim: Claim) -> Claim:
    """Add ``claim``; a second claim with the same id or alias is an error."""
    for name in (claim.id, *claim.aliases):
        if name in _CLAIMS or name in _ALIASES:
            raise ValueError(f"claim id {name!r} is registered twice")
    _CLAIMS[claim.id] = claim
    for alias in claim.aliases:
        _ALIASES[alias] = claim.id
    return claim


def unregister(claim_id: str) -> None:
    """Remove a claim (tests plant claims and take them away again)."""
    claim = _CLAIMS.pop(claim_id)
    for alias in claim.aliases:
        _ALIASES.pop(alias, None)


def load_builtin_claims() -> dict[str, str]:
    """Import every module under ``verify.claims``; each registers its claims on import.

    A module that fails to import does not take the others down: the failures come back as
    ``{module: "ExceptionType: message"}`` for the caller to report.
    """
    import verify.claims as package

    failures: dict[str, str] = {}
    for info in pkgutil.walk_packages(package.__path__, prefix="verify.claims.",
                                      onerror=lambda name: failures.setdefault(name, "")):
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001 - reported to the user, the rest still load
            failures[info.name] = f"{type(exc).__name__}: {exc}"
    return failures


def all_claims() -> list[Claim]:
    return sorted(_CLAIMS.values(), key=lambda c: c.id)


def get(name: str) -> Claim:
    key = _ALIASES.get(name, name)
    if key not in _CLAIMS:
        raise UnknownClaim(f"unknown claim id {name!r} (see `python -m verify list`)")
    return _CLAIMS[key]


def select(patterns: Iterable[str]) -> list[Claim]:
    """Claims matching any of ``patterns`` (ids, aliases or shell globs), in registry order.

    A pattern that matches nothing raises :class:`UnknownClaim`; no patterns select all.
    """
    patterns = list(patterns)
    if not patterns:
        return all_claims()
    chosen: dict[str, Claim] = {}
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            hits = [c for c in all_claims()
                    if fnmatch.fnmatchcase(c.id, pattern)
                    or any(fnmatch.fnmatchcase(a, pattern) for a in c.aliases)]
            if not hits:
                raise UnknownClaim(f"no claim matches {pattern!r} (see `python -m verify list`)")
        else:
            hits = [get(pattern)]
        chosen.update((c.id, c) for c in hits)
    return sorted(chosen.values(), key=lambda c: c.id)
