% Any propositional formula over Boolean concepts (ProbLog twin of kb/shortcuts/formula.lp),
% given as a tree of facts: root(N), node(N, Op) with Op in and/or/neg/xor/implies/iff,
% child(N, I, A) children numbered 1.., leaf(N, T) a concept variable, konst(N, V) a constant.
tv(N, X) :- leaf(N, T), c(T, X).
tv(N, V) :- konst(N, V).
tv(N, V) :- node(N, and), fold(N, and, 1, V).
tv(N, V) :- node(N, or), fold(N, or, 1, V).
tv(N, V) :- node(N, xor), fold(N, xor, 1, V).
tv(N, V) :- node(N, neg), child(N, 1, A), tv(A, X), V is 1 - X.
tv(N, V) :- node(N, implies), child(N, 1, A), child(N, 2, B), tv(A, X), tv(B, W), V is max(1 - X, W).
tv(N, V) :- node(N, iff), child(N, 1, A), child(N, 2, B), tv(A, X), tv(B, W), V is 1 - abs(X - W).
% fold(N, Op, I, V): Op applied to the arguments I, I+1, ... of node N
fold(N, Op, I, V) :- \+ child(N, I, _), unit(Op, V).
fold(N, Op, I, V) :- child(N, I, A), tv(A, X), J is I + 1, fold(N, Op, J, W), combine(Op, X, W, V).
unit(and, 1).  unit(or, 0).  unit(xor, 0).
combine(and, X, W, V) :- V is X * W.
combine(or, X, W, V) :- V is max(X, W).
combine(xor, X, W, V) :- V is (X + W) mod 2.
y(y, V) :- root(N), tv(N, V).
% every tree predicate has at least one clause (ProbLog reports a predicate without clauses)
node(none, none).  child(none, 0, none).  leaf(none, none).  konst(none, none).
