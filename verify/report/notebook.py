"""The report's look in Jupyter: a claim or a result as HTML whose styles stay in its output.

A notebook page holds many outputs and styles of its own. The report's :data:`CSS` is written
for a page of its own (``body``, ``table``, ``h2``, ...), and each plot's SVG carries
``<style>`` rules for every ``*`` and ``text`` of the page (matplotlib's). Inline, both would
restyle the whole notebook. So each output is wrapped in a ``div`` with a class of its own,
taken from a hash of its content (the same output, the same class: re-running a cell does not
change it), and every selector is confined to it: the report's rules apply inside that ``div``,
and an SVG's rules inside the SVGs there.

>>> html = in_cell('<svg><style>text{fill:red}</style><text>1</text></svg>')
>>> scope = html[len('<div class="'):html.index('"', len('<div class="'))]
>>> f".{scope} svg text{{fill:red}}" in html and f".{scope} table{{" in html
True
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from verify.diagnosis import diagnosed
from verify.report.html import CSS, claim_card, claim_section

_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_STYLE = re.compile(r"(<style[^>]*>)(.*?)(</style>)", re.S)


def scoped_css(css: str, scope: str) -> str:
    """``css`` with every selector confined to ``scope`` (a selector): ``html`` and ``body``
    become ``scope`` itself, any other selector a descendant of it. Plain rules only: an
    at-rule (``@media``, ``@font-face``) is refused, not silently dropped.

    >>> scoped_css("body{margin:0}\\ntd, th{border:1px solid}", ".c")
    '.c{margin:0}.c td,.c th{border:1px solid}'
    """
    if "@" in css:
        raise ValueError("scoped_css: at-rules are not supported")

    def confined(selector: str) -> str:
        selector = selector.strip()
        return scope if selector in ("html", "body") else f"{scope} {selector}"

    return "".join(",".join(map(confined, m.group(1).split(","))) + "{" + m.group(2) + "}"
                   for m in _RULE.finditer(css))


def in_cell(body: str) -> str:
    """``body`` (report HTML) in a ``div`` carrying the report's CSS, with that CSS and the
    ``<style>`` rules inside ``body`` (the SVGs') confined to the ``div``."""
    name = "tv-" + hashlib.sha1(body.encode()).hexdigest()[:12]
    scope = f".{name}"
    body = _STYLE.sub(lambda m: m.group(1) + scoped_css(m.group(2), f"{scope} svg")
                      + m.group(3), body)
    # the page's body rule centres the report with a margin; an output keeps its cell's place
    css = scoped_css(CSS, scope) + f"{scope}{{margin:0;padding:0}}"
    return f'<div class="{name}"><style>{css}</style>{body}</div>'


def claim_html(description: Mapping[str, Any]) -> str:
    """A claim before any run (``Claim.describe()``), as the report's card."""
    return in_cell(claim_card(description))


def result_html(record: Mapping[str, Any]) -> str:
    """A result (``ClaimResult.as_record()``), as the report's section, with its diagnosis."""
    return in_cell(claim_section(diagnosed(record)))
