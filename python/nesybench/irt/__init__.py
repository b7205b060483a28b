"""IRT robustness (paper irt-robustness.txt): data, population, IRT fit, perturbation, SCCs,
taxonomy; see nesybench.irt.study for the steps and README "IRT robustness" for the commands."""
