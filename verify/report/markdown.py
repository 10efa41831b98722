"""The derivation report as Markdown for reading in a pull request: LaTeX math between ``$``,
plots as SVG files beside it. Same content as :mod:`verify.report.html`, from the same record."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify.report.html import _discrepancy, diagnosis, reproduce_command, short
from verify.report.svg_plots import evidence_chart, figure_chart


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _claim(c: Mapping[str, Any], figures_dir: str, files: dict[str, str]) -> list[str]:
    out = [f"## {c['id']}: {c['title']} — **{c['verdict']}**", "",
           f"{c['paper']}, {c['source']} · {c['kind']} · {c['seconds']:.2f} s · "
           f"{c['fidelity']} fidelity, {c['dtype']}, {c['device']}, seed {c['seed']}", "",
           f"**Verdict:** {c['verdict']}. {diagnosis(c)}", "",
           "**Statement** (as the paper states it):", "", f"$$ {c['statement']} $$", "",
           f"**Reading** (the toolkit's precise version): {c['reading']}", ""]
    if c.get("assumptions"):
        out += ["| assumption | meaning | this run | evaluated on |", "|---|---|---|---|"]
        out += [f"| {_cell(a['name'])} | {_cell(a.get('description', ''))} | "
                f"{'holds' if a['holds'] else 'FAILS'}{' (probe)' if a.get('probe') else ''} | "
                f"{a.get('source', '')} |" for a in c["assumptions"]]
        out.append("")
    for d in c.get("derivations", []):
        out += [f"**Derivation: {d['title']}**", ""]
        for i, s in enumerate(d["steps"], 1):
            out.append(f"{i}. {s['text']}" + (f"\n\n   $$ {s['latex']} $$" if s.get("latex")
                                                else ""))
        out.append("")
    out += ["| route | quantity | stated | derived | measured | discrepancy | tolerance | "
            "within | why |", "|---|---|---|---|---|---|---|---|---|"]
    for e in c.get("evidence", []):
        ok = {True: "yes", False: "**NO**", None: "-"}[e.get("ok")]
        out.append(f"| {e['route']} | {_cell(e['quantity'])} | {_cell(short(e.get('stated')))} | "
                   f"{_cell(short(e.get('derived')))} | {_cell(short(e.get('measured')))} | "
                   f"{_discrepancy(e)} | {e['tolerance']:.1e} | {ok} | "
                   f"{_cell(e.get('tolerance_why', ''))} |")
    out.append("")
    charts = [("evidence", evidence_chart(c.get("evidence", [])))]
    charts += [(name, figure_chart(name, v)) for name, v in c.get("figures", {}).items()]
    for i, (name, svg) in enumerate(ch for ch in charts if ch[1]):
        fname = f"{c['id']}-{i}.svg".replace("/", "_")
        files[fname] = svg
        out += [f"![{name}]({figures_dir}/{fname})", ""]
    control = c.get("negative_control")
    if control:
        state = "rejected" if control["rejected"] else "NOT rejected (no power)"
        out += [f"**Negative control** ({control['description']}): {state}.", ""]
    out += [f"Reproduce: `{reproduce_command(c)}`", ""]
    return out


def render_markdown(record: Mapping[str, Any], *, figures_dir: str = "figures",
                    title: str = "Claim verification report") -> tuple[str, dict[str, str]]:
    """The Markdown text and the SVG files it links to (``{file name: svg}``)."""
    files: dict[str, str] = {}
    claims = record["claims"]
    lines = [f"# {title}", "", "| claim | paper | verdict | diagnosis | time |",
             "|---|---|---|---|---|"]
    lines += [f"| [{c['id']}](#{c['id'].replace('.', '')}) | {c['paper']} | {c['verdict']} | "
              f"{_cell(diagnosis(c))} | {c['seconds']:.2f} s |" for c in claims]
    lines.append("")
    for c in claims:
        lines += _claim(c, figures_dir, files)
    return "\n".join(lines) + "\n", files
