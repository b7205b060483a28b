"""Learning: the model zoo, networks, data, training and evaluation, probes, CLIP
concepts, sweep cells and reports.

May import nesy.inference, nesy.program, runs and what lies below."""
