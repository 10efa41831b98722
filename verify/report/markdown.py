"""The derivation report as Markdown for reading in a pull request: LaTeX math between ``$``,
plots as SVG files beside it. Same content as :mod:`verify.report.html`, from the same record."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify.report.html import (RenderError, assumption_state, compared, diagnosis,
                                 exact_parts, is_large, not_shown, printed_diagnosis,
                                 reading_diagnosis, reading_verdict, readings, reproduce_command,
                                 short)
from verify.references import summary_text
from verify.report.mathml import prose_markdown
from verify.report.svg_plots import draw_figure, evidence_chart
from verify.report.trend_plots import trend_figures, trend_grid, trend_rows


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _claim(c: Mapping[str, Any], figures_dir: str, files: dict[str, str]) -> list[str]:
    out = [f"## {c['id']}: {c['title']} — **{c['verdict']}**", "",
           f"{c['paper']}, {c['source']} · {c['kind']} · {c['seconds']:.2f} s · "
           f"{c['fidelity']} fidelity, {c['dtype']}, {c['device']}, seed {c['seed']}", "",
           f"**Verdict:** {c['verdict']}. {diagnosis(c)}", "",
           *([f"**Paper size:** {summary_text(c['reference'], label=False)} · "
              f"{c['reference'].get('diagnosis') or ''}", ""] if c.get("reference") else []),
           *_readings(c),
           "**Statement** (as the paper states it):", "", f"$$ {c['statement']} $$", "",
           f"**Reading** (the toolkit's precise version): {prose_markdown(c['reading'])}", ""]
    if c.get("assumptions"):
        out += ["| assumption | meaning | this run | evaluated on |", "|---|---|---|---|"]
        out += [f"| {_cell(a['name'])} | {_cell(a.get('description', ''))} | "
                f"{assumption_state(a)[0]} | "
                f"{a.get('source', '')} |" for a in c["assumptions"]]
        out.append("")
    out += ["| route | quantity | stated | derived | measured | discrepancy | tolerance | "
            "within | why |", "|---|---|---|---|---|---|---|---|---|"]
    for e in c.get("evidence", []):
        ok = {True: "yes", False: "**NO**", None: "-"}[e.get("ok")]
        d_text, t_text = compared(e)
        out.append(f"| {e['route']} | {_cell(e['quantity'])} | {_value(e.get('stated'))} | "
                   f"{_value(e.get('derived'))} | {_value(e.get('measured'))} | "
                   f"{d_text} | {t_text} | {ok} | {_cell(e.get('tolerance_why', ''))} |")
    out.append("")
    trends = trend_figures(c.get("figures", {}))
    grid, grid_problem = trend_grid(trends) if trends else (None, None)
    charts = [("evidence", evidence_chart(c.get("evidence", [])), None),
              ("error trends", grid, grid_problem)]
    charts += [(name, *draw_figure(name, v)) for name, v in c.get("figures", {}).items()
               if not (grid and name in trends)]
    i = 0
    for name, svg, problem in charts:
        if problem:
            out += [f"*{_cell(name)}: {_cell(problem)}*", ""]
        if not svg:
            continue
        fname = f"{c['id']}-{i}.svg".replace("/", "_")
        i += 1
        files[fname] = svg
        out += [f"![{name}]({figures_dir}/{fname})", ""]
    if grid:
        out += ["| error trend | fitted order [interval] | stated | points fitted |",
                "|---|---|---|---|",
                *(f"| {_cell(name)} | {fitted} | {stated} | {kept} |"
                  for name, fitted, stated, kept in trend_rows(trends)), ""]
    for d in c.get("derivations", []):
        n = len(d["steps"])
        out += ["<details>", f"<summary>Derivation: {_html_text(d['title'])} ({n} "
                f"step{'s' if n != 1 else ''})</summary>", ""]
        for i, s in enumerate(d["steps"], 1):
            try:
                out.append(f"{i}. {_cell(s['text'])}" + _step_math(s))
            except Exception as exc:  # noqa: BLE001 - named and re-raised
                raise RenderError(f"derivation {d.get('title')!r}, step {i}: {exc!r}") from exc
        out += ["", "</details>", ""]
    control = c.get("negative_control")
    if control:
        state = "rejected" if control["rejected"] else "NOT rejected (no power)"
        out += [f"**Negative control** ({control['description']}): {state}.", ""]
    out += [f"Reproduce: `{reproduce_command(c)}`", ""]
    return out


def _readings(c: Mapping[str, Any]) -> list[str]:
    """The readings table (:func:`verify.report.html.readings_table`); none without
    alternative readings."""
    alternatives = readings(c)
    if not alternatives:
        return []
    return ["**Readings:**", "", "| reading | verdict | diagnosis |", "|---|---|---|",
            f"| **as printed**: the reading below | {c['verdict']} | "
            f"{_cell(printed_diagnosis(c))} |",
            *(f"| **{_cell(r.get('name', ''))}**: "
              f"{_cell(prose_markdown(str(r.get('description', ''))))} | "
              f"{reading_verdict(r)} | {_cell(reading_diagnosis(r))} |" for r in alternatives),
            ""]


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _step_math(step: Mapping[str, Any]) -> str:
    latex = step.get("latex")
    if not latex:
        return ""
    if is_large(latex):  # a large matrix: its source, folded
        return (f"\n\n   <details><summary>a large matrix (LaTeX)</summary>\n\n"
                f"   ```latex\n   {latex}\n   ```\n\n   </details>")
    return f"\n\n   $$ {latex} $$"


def _value(value: Any) -> str:
    """A table cell for a stated/derived/measured value: exact values as inline math."""
    exact = exact_parts(value)
    if exact is None:
        return _cell(short(value))
    latex, label = exact
    return _cell(f"{label}${latex}$")


def not_shown_markdown(record: Mapping[str, Any]) -> list[str]:
    """:func:`verify.report.html.not_shown` as a paragraph's lines ([] for a whole file)."""
    left_out = not_shown(record)
    if left_out is None:
        return []
    text, command = left_out
    return [f"**{text}**" + (f": `{command}` renders all of them" if command else "") + ".", ""]


def render_markdown(record: Mapping[str, Any], *, figures_dir: str = "figures",
                    title: str = "Claim verification report") -> tuple[str, dict[str, str]]:
    """The Markdown text and the SVG files it links to (``{file name: svg}``)."""
    files: dict[str, str] = {}
    claims = record["claims"]
    lines = [f"# {title}", "", *not_shown_markdown(record),
             "| claim | paper | verdict | diagnosis | time |", "|---|---|---|---|---|"]
    lines += [f"| [{c['id']}](#{c['id'].replace('.', '')}) | {c['paper']} | {c['verdict']} | "
              f"{_cell(diagnosis(c))} | {c['seconds']:.2f} s |" for c in claims]
    lines.append("")
    for c in claims:
        try:
            lines += _claim(c, figures_dir, files)
        except Exception as exc:  # noqa: BLE001 - named and re-raised
            raise RenderError(f"rendering claim {c.get('id', '?')} (Markdown): "
                              f"{exc if isinstance(exc, RenderError) else repr(exc)}") from exc
    return "\n".join(lines) + "\n", files
