"""Readers of the shortcut data sets of others: rsbench's miniBOIA and BDD-OIA.
May import the foundation modules only (no task core, no rendering, no command line)."""
