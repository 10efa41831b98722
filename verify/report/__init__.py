"""Reports of a run: HTML (MathML and SVG, no script) and Markdown.

Importing it gives Jupyter the report's look for claims and results (:mod:`verify.hooks`).
"""
from verify.diagnosis import diagnosed
from verify.hooks import register_html
from verify.report.html import claim_card, claim_section

register_html("claim", claim_card)
register_html("result", lambda record: claim_section(diagnosed(record)))
