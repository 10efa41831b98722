"""Papers as plug-ins: each paper package declares itself once, as a :class:`Paper`, and its
distribution names that declaration in the ``theory_verify.papers`` entry-point group, the way
pytest finds its ``pytest11`` plug-ins. The toolkit's own papers are declared the same way, in
its pyproject::

    [project.entry-points."theory_verify.papers"]
    li2 = "verify.claims.li2:LI2"

so a paper installed with ``pip install`` is found with no ``--module``; ``--module`` stays for
a folder that is not installed.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from dataclasses import dataclass
from pathlib import Path

GROUP = "theory_verify.papers"
#: The distribution whose papers are the built-in ones (the tests hold their verdicts).
TOOLKIT = "theory-verify"


@dataclass(frozen=True)
class Paper:
    """A paper whose claims the toolkit checks, as its package declares it.

    ``id`` is the prefix of its claim ids (``li2`` for ``li2.thm2``) and the entry point's
    name; ``title`` is what each of its claims gives as ``paper``; ``claims`` is the module
    that registers its claims on import (a package: it and every module under it);
    ``sources``, where there is one, the file that quotes what its claims check.
    """

    id: str
    title: str
    claims: str
    sources: Path | None = None

    def claim_modules(self) -> list[str]:
        """The modules to import for the claims: ``claims`` and, for a package, every module
        under it (a subpackage that fails to import is listed, so that its import reports
        why). Imports ``claims`` itself."""
        package = importlib.import_module(self.claims)
        if not hasattr(package, "__path__"):
            return [self.claims]
        return [self.claims, *(info.name for info in pkgutil.walk_packages(
            package.__path__, prefix=f"{self.claims}.", onerror=lambda name: None))]


@dataclass(frozen=True)
class Declared:
    """A paper's declaration and the distribution whose entry point names it."""

    paper: Paper
    distribution: str

    @property
    def builtin(self) -> bool:
        """Shipped with the toolkit, not installed beside it."""
        return self.distribution == TOOLKIT


def discover() -> tuple[dict[str, Declared], dict[str, str]]:
    """Every paper the installed distributions declare, by id, and what went wrong.

    Problems come back as ``{entry point: "what"}``, never raised, so that one broken plug-in
    does not hide the others: a declaration that fails to import, is not a :class:`Paper`,
    has an id other than its entry point's name, or takes an id another paper holds. When the
    toolkit itself declares no paper, its entry points are missing (a checkout run without
    ``pip install -e .``, or installed before papers were plug-ins), and that is said too.
    """
    found: dict[str, Declared] = {}
    problems: dict[str, str] = {}
    # the toolkit's own first, so that a plug-in cannot take a built-in paper's id
    for distribution, point in sorted(_entry_points(), key=lambda dp: dp[0] != TOOLKIT):
        where = f"{GROUP}:{point.name} = {point.value}"
        try:
            paper = point.load()
        except Exception as exc:  # noqa: BLE001 - one broken plug-in, reported; the rest load
            problems[where] = f"{type(exc).__name__}: {exc}"
            continue
        if not isinstance(paper, Paper):
            problems[where] = f"declares a {type(paper).__name__}, not a verify.Paper"
        elif paper.id != point.name:
            problems[where] = f"declares the paper {paper.id!r} under the name {point.name!r}"
        elif paper.id in found and found[paper.id].paper != paper:
            problems[where] = f"the id {paper.id!r} is declared by {found[paper.id].distribution}"
        else:
            found[paper.id] = Declared(paper, distribution)
    if not any(f.builtin for f in found.values()):
        problems[GROUP] = (f"{TOOLKIT} declares no paper: its entry points are missing; "
                           "install it from this checkout (pip install -e .)")
    return found, problems


def _entry_points() -> list[tuple[str, importlib.metadata.EntryPoint]]:
    """The group's entry points with their distribution's name, from every copy of each
    distribution's metadata on ``sys.path``.

    ``importlib.metadata.entry_points`` reads only the first copy of a distribution, and a
    stale ``theory_verify.egg-info`` left in a checkout by an older ``pip install -e .``
    comes first whenever the checkout is on ``sys.path`` (pytest's ``pythonpath``): its
    entry points predate this group and would hide the built-in papers.
    """
    points = {(dist.name, point.name, point.value): point
              for dist in importlib.metadata.distributions()
              for point in dist.entry_points.select(group=GROUP)}
    return [(distribution, point) for (distribution, _, _), point in points.items()]
