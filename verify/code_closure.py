"""The project's import graph, read from the sources (never by importing them), and the code a
module stands on: what a reference result's fingerprint covers and the layering tests read.

An edge ``a -> b`` is an import of ``b`` anywhere in ``a`` (inside functions too);
``from a import b`` names the module ``a.b`` where there is one, else ``a``.

>>> graph = import_graph()
>>> "numerics.li2.trainer" in closure(graph, "verify.claims.li2.eq6")
True
>>> any(m.startswith("verify.claims.ns") for m in closure(graph, "verify.claims.li2.eq6"))
False
"""
from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("theory", "numerics", "verify")


def module_name(path: Path, root: Path = ROOT) -> str:
    """``verify/claims/li2/eq6.py`` -> ``verify.claims.li2.eq6`` (a package by its folder)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path = ROOT, layers: tuple[str, ...] = LAYERS) -> dict[str, Path]:
    """Every module of the three layers, by dotted name."""
    return {module_name(p, root): p
            for layer in layers for p in sorted((root / layer).rglob("*.py"))}


def _edges(path: Path, modules: dict[str, Path]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
            out.update(subs)
            if len(subs) < len(node.names) and node.module in modules:
                out.add(node.module)
    return out


def import_graph(root: Path = ROOT, layers: tuple[str, ...] = LAYERS) -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    modules = project_modules(root, layers)
    return {m: _edges(p, modules) - {m} for m, p in modules.items()}


def closure(graph: dict[str, set[str]], module: str) -> set[str]:
    """``module`` and every project module it imports, directly or not."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return seen


def is_machinery(module: str) -> bool:
    """The verify kernel and services (``verify.*`` outside ``verify.claims``): how a verdict
    is computed and shown, not what a claim computes."""
    return module.split(".")[0] == "verify" and not module.startswith("verify.claims")


@cache
def claim_code_digest(module: str) -> str:
    """A digest of the code (:func:`code_text`) of ``module`` and of every module of the project
    it stands on,
    the toolkit's machinery left out (:func:`is_machinery`): the claim's own code, its
    paper's shared modules, and the numerics and theory it calls. A reference result made
    under another digest was made by other claim code."""
    modules = project_modules()
    h = hashlib.sha256()
    for m in sorted(closure(import_graph(), module)):
        if m in modules and not is_machinery(m):
            h.update(m.encode() + b"\0" + code_text(modules[m]).encode())
    return h.hexdigest()[:16]


def code_text(path: Path) -> str:
    r"""What a module computes, as text: its syntax tree without docstrings, so that a comment,
    a docstring or a line wrapped differently does not make a reference stale.

    >>> import tempfile
    >>> a, b = (Path(tempfile.mkstemp(suffix=".py")[1]) for _ in range(2))
    >>> _ = a.write_text('def f(x):\n    "Twice x."\n    return 2 * x  # why\n')
    >>> _ = b.write_text('def f(x):\n    return (2\n            * x)\n')
    >>> code_text(a) == code_text(b)
    True
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)
