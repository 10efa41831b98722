"""Reports of a run: HTML (MathML and SVG, no script) and Markdown.

Importing it gives Jupyter the report's look for claims and results (:mod:`verify.hooks`), its
styles confined to each output (:mod:`verify.report.notebook`).
"""
from verify.hooks import register_html
from verify.report.notebook import claim_html, result_html

register_html("claim", claim_html)
register_html("result", result_html)
