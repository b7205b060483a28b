"""Neuro-symbolic learning on the reasoning-shortcut tasks.

ProbLog programs with neural predicates compiled once per query shape into batched PyTorch
circuits (:class:`~nesybench.nesy.circuit.CompiledProgram`, DeepProbLog semantics; multi-digit
MNIST-Addition with carries), exact world enumeration for small tasks, the model zoo (DPL,
fuzzy, CBM, NN), training, evaluation with concept metrics and reasoning-shortcut detection,
and the ``nesybench nesy`` commands."""
