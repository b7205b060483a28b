"""Inference over ground programs: SDD compilation, batched circuits, world
enumeration, marginals, approximate inference (sampling, top-k) and the bounded child.

May import nesy.program, the task core (shortcuts) and what lies below."""
