"""Built-in claims, one module per claim, grouped by paper. Each module registers on import."""
