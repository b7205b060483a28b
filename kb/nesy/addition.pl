% MNIST-Addition (ProbLog twin of kb/shortcuts/addition.lp): the label is the sum of all digits.
% Reads c(T, X) (concept variable T has value X) and var(I, T) (T is the I-th variable,
% 0-based), nvars(N); accumulates the sum variable by variable (grounding linear in the
% number of partial sums).
partial_sum(0, 0).
partial_sum(I, S) :- I > 0, J is I - 1, partial_sum(J, S0), var(J, T), c(T, X), S is S0 + X.
y(sum, S) :- nvars(N), partial_sum(N, S).
