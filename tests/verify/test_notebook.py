"""Jupyter: docs/notebook.ipynb runs as a reader would run it, claims and results show the
report's look with every style confined to their own output, and a built-in claim is found by
id in a fresh interpreter without loading the registry by hand."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from verify import Verdict

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"


def run_cells(path: Path) -> list[object]:
    """Run a notebook's code cells in order in one namespace, as its kernel would (nbclient
    is not a dependency); each cell's displayed value: its last expression's, or None."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    shown = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]), str(path))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, str(path), "exec"), namespace)  # noqa: S102 - the docs' own cells
        shown.append(None if last is None else
                     eval(compile(ast.Expression(last.value), str(path), "eval"), namespace))
    return shown


def selectors(html: str) -> Iterator[str]:
    """Every selector of every ``<style>`` element in ``html``."""
    for css in re.findall(r"<style[^>]*>(.*?)</style>", html, re.S):
        for rule in re.finditer(r"([^{}]+)\{", css):
            yield from (s.strip() for s in rule.group(1).split(","))


def scope_of(html: str) -> str:
    match = re.match(r'<div class="(tv-[0-9a-f]+)">', html)
    assert match, html[:80]
    return "." + match.group(1)


def test_the_notebook_runs_and_shows_the_report_look_confined_to_its_outputs():
    claim, (verdict, rejected), result = run_cells(NOTEBOOK)
    assert verdict is Verdict.PASS and rejected
    card, section = claim._repr_html_(), result._repr_html_()
    for html in (card, section):
        scope = scope_of(html)
        assert all(s.startswith(scope) for s in selectors(html)), \
            [s for s in selectors(html) if not s.startswith(scope)]
        assert f"{scope} table{{" in html and f"{scope} .v-pass{{" in html  # the report's CSS
    assert "<math" in card and 'class="v v-pass"' in section
    assert "<svg" in section and f"{scope_of(section)} svg *{{" in section  # matplotlib's rule
    assert scope_of(card) != scope_of(section) and section == result._repr_html_()


def test_a_fresh_interpreter_finds_a_builtin_claim_without_loading_the_claims_on_import():
    code = ("import sys, verify\n"
            "assert not [m for m in sys.modules if m.startswith('verify.claims.')]\n"
            "print(verify.get_claim('li2.thm2').id, verify.registry.select(['ns.thm4.6*'])[0].id)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["li2.thm2", "ns.thm4.6"]
