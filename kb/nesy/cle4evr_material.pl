% CLE4EVR as rsbench's shipped example labels it (ProbLog twin of
% kb/shortcuts/cle4evr_material.lp): objects O with color(O), shape(O) and material(O) (a
% size(O) concept may be declared: it is drawn, not compared). The label is 1 iff two distinct
% objects have the same colour, shape and material; an object whose colour is `none` is
% absent and agrees with no other.
object(O) :- var(_, color(O)).
eq_color(O1, O2) :- c(color(O1), X), X \= none, c(color(O2), X).
eq_shape(O1, O2) :- c(shape(O1), X), c(shape(O2), X).
eq_material(O1, O2) :- c(material(O1), X), c(material(O2), X).
same :- object(O1), object(O2), O1 < O2,
        eq_color(O1, O2), eq_shape(O1, O2), eq_material(O1, O2).
y(y, 1) :- same.
y(y, 0) :- \+ same.
