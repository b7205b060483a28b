"""Reasoning shortcuts: task files, exact counting of optimal concept maps, severity, data
sets and concept metrics (rsbench, Bortolotti et al., NeurIPS 2024 Datasets and Benchmarks)."""
