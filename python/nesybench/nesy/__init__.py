"""Neuro-symbolic learning on the reasoning-shortcut tasks, in three rooms.

* :mod:`nesybench.nesy.program`: the ProbLog language (reading, the allow-list, ProbLog's
  arithmetic and standard order, the SWI-Prolog and ProbLog grounders, the builtin table,
  budgets);
* :mod:`nesybench.nesy.inference`: inference over ground programs (SDD compilation, batched
  circuits with DeepProbLog semantics, world enumeration, marginals as ProbLog reports them,
  sampling and top-k proofs, the bounded child of ``nesy infer``);
* :mod:`nesybench.nesy.learn`: the model zoo (DPL, fuzzy, CBM, NN), training, evaluation
  with concept metrics and reasoning-shortcut detection, probes, CLIP concepts, sweep cells.

Each room imports only the rooms above it in this list and the layers below the package
(``docs/layout.md``); ``nesy/cli.py`` holds the ``nesybench nesy`` commands."""
