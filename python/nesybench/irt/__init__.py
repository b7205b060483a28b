"""IRT robustness (Fabra-Boluda et al., EBeM 2022): data, population, IRT fit, perturbation, SCCs,
taxonomy; see nesybench.irt.study for the steps and docs/guides/irt.md for the commands."""
