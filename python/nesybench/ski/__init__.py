"""Knowledge-injection robustness (Rafanelli, Magnini, Agiollo, Ciatto and Omicini, an empirical
study of knowledge-injection techniques against data degradation).

KBANN, KINS and KILL over PyTorch MLPs, from Prolog rules in ``kb/ski/`` compiled by
``prolog/ski/compile.pl``; the paper's three data degradations (:mod:`.degrade`), the
perturbation magnitude Ψ (:mod:`.magnitude`), the robustness score ρ and gain R
(:mod:`.scores`); every cell's repetitions train as one batched ensemble (:mod:`.ensemble`).

This package's ``__init__`` and :mod:`.data`'s registrations import without torch.
"""
