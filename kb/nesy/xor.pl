% n-bit XOR (ProbLog twin of kb/shortcuts/xor.lp): parity of all Boolean concepts, folded
% variable by variable over var(I, T), nvars(N).
parity(0, 0).
parity(I, P) :- I > 0, J is I - 1, parity(J, P0), var(J, T), c(T, X), P is (P0 + X) mod 2.
y(y, P) :- nvars(N), parity(N, P).
