"""The ProbLog language: reading and checking programs (the allow-list), ProbLog's
arithmetic and standard order, the grounders, the builtin table and the budgets.

May import the foundation and the logic bridges only."""
