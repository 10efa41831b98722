"""Claims of Never Saddle (Jacobs, Zhou, Burkholz, arXiv 2603.02064, submitted numbering).
Sources: verify/claims/ns/SOURCES.md. The full text was not available: every claim's
``reading`` states the toolkit's precise version of the public description."""

PAPER = "Never Saddle (Jacobs, Zhou, Burkholz, arXiv 2603.02064)"
