"""Reasoning shortcuts (rsbench): the task and counting core, the generator, the commands.
The core may import the foundation, logic and ``datasets/``; ``render/`` is above the core."""
