% CLE4EVR (ProbLog twin of kb/shortcuts/cle4evr.lp): objects O with color(O) and shape(O)
% (optionally size(O)), or one entangled concept obj(O). The label is 1 iff two distinct
% objects agree on every attribute the task declares; an object whose colour (obj value) is
% `none` is absent and agrees with no other.
object(O) :- var(_, color(O)).
object(O) :- var(_, obj(O)).
eq_color(O1, O2) :- \+ var(_, color(O1)).
eq_color(O1, O2) :- c(color(O1), X), X \= none, c(color(O2), X).
eq_shape(O1, O2) :- \+ var(_, shape(O1)).
eq_shape(O1, O2) :- c(shape(O1), X), c(shape(O2), X).
eq_size(O1, O2) :- \+ var(_, size(O1)).
eq_size(O1, O2) :- c(size(O1), X), c(size(O2), X).
eq_obj(O1, O2) :- \+ var(_, obj(O1)).
eq_obj(O1, O2) :- c(obj(O1), X), X \= none, c(obj(O2), X).
same :- object(O1), object(O2), O1 < O2,
        eq_color(O1, O2), eq_shape(O1, O2), eq_size(O1, O2), eq_obj(O1, O2).
y(y, 1) :- same.
y(y, 0) :- \+ same.
