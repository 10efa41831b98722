"""Write a report directory: ``index.html`` (self-contained), ``report.md`` with
``figures/*.svg`` beside it, the findings page (``findings.html``, ``findings.md``) and the
``results.json`` they were rendered from."""
from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from verify.report.findings import render_findings_html, render_findings_markdown
from verify.report.html import render_html
from verify.report.markdown import render_markdown
from verify.results import verdict_summary, write_json


def select_claims(record: Mapping[str, Any], patterns: Sequence[str], *,
                  source: str | None = None, command: str | None = None) -> dict[str, Any]:
    """The record with only the claims matching ``patterns`` (ids, aliases or globs; all
    when empty), as :func:`shown_only` makes it."""
    if not patterns:
        return dict(record)
    selected = shown_only(record, lambda c: any(fnmatch.fnmatchcase(n, p) for p in patterns
                                                for n in (c["id"], *c.get("aliases", ()))),
                          source=source, command=command)
    if not selected["claims"]:
        raise ValueError(f"--claims: no claim in the results matches {', '.join(patterns)}")
    return selected


def shown_only(record: Mapping[str, Any], keep: Callable[[Mapping[str, Any]], bool], *,
               source: str | None = None, command: str | None = None) -> dict[str, Any]:
    """The record with only the claims ``keep`` accepts, its summary recounted. When claims
    are left out, ``not_shown`` says how many, from where (``source``, e.g. the results
    file) and the ``command`` that renders all of them, so every page names what it omits."""
    claims = [c for c in record["claims"] if keep(c)]
    out = {k: v for k, v in record.items() if k != "not_shown"}
    out.update(summary=verdict_summary(claims), claims=claims)
    others = len(record["claims"]) - len(claims)
    if others:
        out["not_shown"] = {"claims": others, "source": source, "command": command}
    return out


def _out_dir(out: str | Path) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_findings(record: Mapping[str, Any], out: str | Path) -> Path:
    """Write the findings page (``findings.html``, ``findings.md``) into ``out`` (created);
    returns the path of findings.html."""
    out = _out_dir(out)
    page = out / "findings.html"
    page.write_text(render_findings_html(record), encoding="utf-8")
    (out / "findings.md").write_text(render_findings_markdown(record), encoding="utf-8")
    return page


def write_report(record: Mapping[str, Any], out: str | Path) -> Path:
    """Write the report files into ``out`` (created), the findings page included; returns
    the path of index.html."""
    out = _out_dir(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    index.write_text(render_html(record), encoding="utf-8")
    text, files = render_markdown(record)
    (out / "report.md").write_text(text, encoding="utf-8")
    for name, svg in files.items():
        (out / "figures" / name).write_text(svg, encoding="utf-8")
    write_findings(record, out)
    write_json(dict(record), out / "results.json")
    return index
