"""The claim registry: ids (and aliases) to claims, and selection by id or glob.

The papers come as plug-ins (:mod:`verify.papers`): the built-in ones and any installed paper
are found through the ``theory_verify.papers`` entry points. A lookup that finds nothing loads
their claims first (:func:`load_builtin_claims`), once: ``get("li2.thm2")`` works in a fresh
interpreter, and ``import verify`` stays cheap (it imports no claim).
"""
from __future__ import annotations

import fnmatch
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from verify.claim import Claim
from verify.papers import Declared, Paper, discover

_CLAIMS: dict[str, Claim] = {}
_ALIASES: dict[str, str] = {}
#: The built-in modules that failed to import, by :func:`load_builtin_claims`'s last call;
#: None until it has run.
_BUILTIN_FAILURES: dict[str, str] | None = None
_Found = TypeVar("_Found")


class UnknownClaim(LookupError):
    """No registered claim has this id or matches this pattern."""


class ModuleLoadError(ImportError):
    """A ``--module`` / ``--claims-module`` that cannot be imported (the message is one line)."""


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


@functools.cache
def _found() -> tuple[dict[str, Declared], dict[str, str]]:
    """The papers the entry points declare, and the problems met, read once per process."""
    return discover()


def papers(*, builtin_only: bool = False) -> list[Paper]:
    """The papers found, by id; ``builtin_only``: those the toolkit ships, whose expected
    verdicts its tests hold (an installed paper's claims are checked, not tested here)."""
    return [f.paper for _, f in sorted(_found()[0].items())
            if f.builtin or not builtin_only]


def load_builtin_claims() -> dict[str, str]:
    """Import the claims of every paper found: the built-in ones and any installed beside
    them (:func:`papers`); each module registers its claims on import.

    A module that fails to import does not take the others down: the failures, and the
    entry points that declare no usable paper, come back as ``{module: "ExceptionType:
    message"}`` for the caller to report.
    """
    global _BUILTIN_FAILURES
    found, problems = _found()
    failures = dict(problems)
    for name in (m for f in found.values() for m in _claim_modules(f.paper, failures)):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - reported to the user, the rest still load
            failures[name] = f"{type(exc).__name__}: {exc}"
    _BUILTIN_FAILURES = failures
    return failures


def _claim_modules(paper: Paper, failures: dict[str, str]) -> list[str]:
    """``paper``'s claim modules; none, with the reason in ``failures``, when its claims
    module itself cannot be imported."""
    try:
        return paper.claim_modules()
    except Exception as exc:  # noqa: BLE001 - as a claim module's failure above
        failures[paper.claims] = f"{type(exc).__name__}: {exc}"
        return []


def builtin_claims() -> list[Claim]:
    """The claims of the built-in papers (not an installed paper's, a ``--module``'s or a
    test's planted claims), loaded on first need. A claim belongs to the paper whose id
    begins its own."""
    ids = {paper.id for paper in papers(builtin_only=True)}
    return _with_builtins(lambda: [c for c in all_claims() if c.id.split(".")[0] in ids])


def _with_builtins(find: Callable[[], _Found]) -> _Found:
    """``find()``; when it finds nothing and the built-in claims were never loaded, loaded
    first and tried again."""
    found = find()
    if not found and _BUILTIN_FAILURES is None:
        load_builtin_claims()
        found = find()
    return found


def _unknown(what: str) -> UnknownClaim:
    """The error for ``what``, naming the built-in modules that failed to import (one of
    them may hold the claim)."""
    broken = f"; built-in modules that failed to import: {', '.join(_BUILTIN_FAILURES)}" \
        if _BUILTIN_FAILURES else ""
    return UnknownClaim(f"{what} (see `python -m verify list`){broken}")


def _on_path(folder: Path) -> None:
    """Put ``folder`` first on ``sys.path`` unless it is already there."""
    entries = {Path(p or ".").resolve() for p in sys.path}
    if folder not in entries:
        sys.path.insert(0, str(folder))


def import_claim_module(spec: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """Import a project's claim module the way ``python -m`` would, and return its name.

    ``spec`` is a dotted module name, found on ``sys.path`` with the current directory
    (``cwd``) put first as ``python -m`` does; or a path (it ends in ``.py``, or names a
    folder with a ``/``) to a ``.py`` file or a package folder, whose parent goes on
    ``sys.path`` so the module (and its relative imports) load under its own name. Anything
    that goes wrong, including an exception raised by the module itself, is a
    :class:`ModuleLoadError` naming ``spec`` on one line.
    """
    here = Path(cwd if cwd is not None else os.getcwd()).resolve()
    _on_path(here)
    name = spec
    if spec.endswith(".py") or "/" in spec or os.sep in spec or spec in (".", ".."):
        path = Path(spec).expanduser()
        path = (path if path.is_absolute() else here / path).resolve()
        if path.name == "__init__.py":
            path = path.parent
        if path.is_file() and path.suffix == ".py":
            name = path.stem
        elif path.is_dir():
            name = path.name
        else:
            raise ModuleLoadError(f"cannot import {spec!r}: no such .py file or folder")
        if not name.isidentifier():
            raise ModuleLoadError(f"cannot import {spec!r}: {name!r} is not a module name")
        loaded = sys.modules.get(name)
        origin = getattr(loaded, "__file__", None)
        if loaded is not None and origin is not None:
            target = path if path.is_file() else path / "__init__.py"
            if Path(origin).resolve() != target:
                raise ModuleLoadError(f"cannot import {spec!r}: a different module named "
                                      f"{name!r} is already imported (from {origin})")
        _on_path(path.parent)
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - the user's module: one line, naming it
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise ModuleLoadError(f"cannot import {spec!r} ({type(exc).__name__}: {text})"
                              if text else f"cannot import {spec!r} ({type(exc).__name__})"
                              ) from None
    return name


def all_claims() -> list[Claim]:
    return sorted(_CLAIMS.values(), key=lambda c: c.id)


def get(name: str) -> Claim:
    """The claim with id or alias ``name``, built-in (loaded on first need) or registered.

    >>> get("li2.eq2").title
    'Backpropagated gradient G_F of the centred MSE loss'
    """
    claim = _with_builtins(lambda: _CLAIMS.get(_ALIASES.get(name, name)))
    if claim is None:
        raise _unknown(f"unknown claim id {name!r}")
    return claim


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
            hits = _with_builtins(lambda: [
                c for c in all_claims() if fnmatch.fnmatchcase(c.id, pattern)
                or any(fnmatch.fnmatchcase(a, pattern) for a in c.aliases)])
            if not hits:
                raise _unknown(f"no claim matches {pattern!r}")
        else:
            hits = [get(pattern)]
        chosen.update((c.id, c) for c in hits)
    return sorted(chosen.values(), key=lambda c: c.id)
