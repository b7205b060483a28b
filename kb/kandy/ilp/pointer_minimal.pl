% KANDY ILP background knowledge: POINTER encoding, MINIMAL KB (paper, supplementary §4.5.1,
% with the pointer-encoding differences of §4.5.3).
%
% Every composition is a constant defined by a fact defined_as(Object, Operator, Children),
% e.g. defined_as(c000001, stack, [triangle_red_small, c000002]); an example valid(s00001) names
% its sample, linked to its root object by sample_is(s00001, c000000). Atomic shapes are the
% atoms Shape_Color_Size, as in the natural encoding. The exported .b file appends the
% defined_as/3 and sample_is/2 facts of the training samples after this text; the test-split
% facts live in <stem>_test.pl, hence the multifile declarations.
% Plain Prolog (no module): nesybench pastes it into the Aleph .b file it exports and loads it
% into a module of its own when it evaluates a learned theory.
% Helpers that are not offered to the learner (no mode declaration): the attribute domain
% (shape/1, color/1, size/1), shape_props/4, atomic_object/1 and the extract_* structure
% predicates (kept so that rules written for the natural encoding run after `sample_is(S, C)`).
% Built-ins the learner may also use: reverse/2, length/2.

:- dynamic defined_as/3.
:- multifile defined_as/3.
:- dynamic sample_is/2.
:- multifile sample_is/2.

shape(triangle).
shape(circle).
shape(square).
color(red).
color(green).
color(blue).
color(cyan).
color(magenta).
color(yellow).
size(small).
size(large).

shape_props(T, SH, CO, SZ) :- atom(T), atomic_list_concat([SH, CO, SZ], '_', T).
extract_shape(T, SH) :- shape_props(T, SH, _, _), shape(SH).
extract_color(T, CO) :- shape_props(T, _, CO, _), color(CO).
extract_size(T, SZ) :- shape_props(T, _, _, SZ), size(SZ).

exists_shape(SH, [H|_]) :- extract_shape(H, SH).
exists_shape(SH, [_|T]) :- exists_shape(SH, T).
exists_color(CO, [H|_]) :- extract_color(H, CO).
exists_color(CO, [_|T]) :- exists_color(CO, T).
exists_size(SZ, [H|_]) :- extract_size(H, SZ).
exists_size(SZ, [_|T]) :- exists_size(SZ, T).
same_shape(SH, [H]) :- extract_shape(H, SH).
same_shape(SH, [H|T]) :- extract_shape(H, SH), same_shape(SH, T).
same_color(CO, [H]) :- extract_color(H, CO).
same_color(CO, [H|T]) :- extract_color(H, CO), same_color(CO, T).
same_size(SZ, [H]) :- extract_size(H, SZ).
same_size(SZ, [H|T]) :- extract_size(H, SZ), same_size(SZ, T).

% Structure: a composition is a constant with a defined_as/3 fact.
extract_operator(C, COMP) :- atom(C), defined_as(C, COMP, _).
extract_children(C, L) :- atom(C), defined_as(C, _, L).
extract_op_and_chld(C, COMP, L) :- atom(C), defined_as(C, COMP, L).
atomic_object(X) :- atom(X), \+ defined_as(X, _, _).

contains(C, X) :- defined_as(C, _, L), member(X, L).
recursive_contains(C, X) :- contains(C, X), atomic_object(X).
recursive_contains(C, X) :- contains(C, C1), recursive_contains(C1, X).
