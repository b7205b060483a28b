% Linear-system arithmetic (ProbLog twin of kb/shortcuts/linear.lp): label L is the sum of
% A * X over coef(L, T, A); folded variable by variable over var(I, T), nvars(N).
lab(L) :- coef(L, _, _).
weighted(L, T, V) :- coef(L, T, A), c(T, X), V is A * X.
weighted(L, T, 0) :- lab(L), var(_, T), \+ coef(L, T, _).
lin(L, 0, 0) :- lab(L).
lin(L, I, S) :- I > 0, J is I - 1, lin(L, J, S0), var(J, T), weighted(L, T, V), S is S0 + V.
y(L, S) :- lab(L), nvars(N), lin(L, N, S).
