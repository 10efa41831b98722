"""Built-in claims, one module per claim, grouped by paper. Each paper package declares its
paper in its ``__init__`` (a :class:`verify.Paper`, named in the ``theory_verify.papers``
entry points of the toolkit's pyproject), and each of its modules registers on import."""
