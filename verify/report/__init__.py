"""Reports of a run: HTML (MathML and SVG, no script) and Markdown."""
