"""Neuro-symbolic learning on the reasoning-shortcut tasks: label semantics (world enumeration
and the compiled-circuit engine), the model zoo (DPL, fuzzy, CBM, NN), training, evaluation
with concept metrics and reasoning-shortcut detection, and the ``nesybench nesy`` commands."""
