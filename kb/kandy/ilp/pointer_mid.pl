% KANDY ILP background knowledge: POINTER encoding, MID-SIZE KB (paper, supplementary §4.5,
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
% (shape/1, color/1, size/1, the operator families non_diag/1 ... line/1,
% named_object/1), shape_props/4, atomic_object/1 and the extract_* structure
% predicates (kept so that rules written for the natural encoding run after `sample_is(S, C)`).
% Built-ins the learner may also use: reverse/2, length/2, delete/3, nth0/3, member/2.

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

% ---- Mid-size KB (paper, supplementary §4.5): everything below extends the minimal KB. ----
% Families of compositional operators (domain definitions: no mode declarations).
non_diag(stack).
non_diag(side_by_side).
non_diag(stack_reduce_bb).
non_diag(side_by_side_reduce_bb).
non_diag(grid).
diag(diag_ul_lr).
diag(diag_ll_ur).
quadrant_ul(quadrant_ul).
quadrant_ur(quadrant_ur).
quadrant_ll(quadrant_ll).
quadrant_lr(quadrant_lr).
quadrant(quadrant_ul).
quadrant(quadrant_ur).
quadrant(quadrant_ll).
quadrant(quadrant_lr).
quadrant_or_center(in).
quadrant_or_center(X) :- quadrant(X).
non_random(X) :- diag(X).
non_random(X) :- non_diag(X).
non_random(X) :- quadrant(X).
any_composition(X) :- non_random(X).
any_composition(random).
line(X) :- non_diag(X), X \= grid.
line(X) :- diag(X).

% Named compound objects.
house(C) :- extract_op_and_chld(C, stack, [C1, C2]), extract_shape(C1, triangle),
    extract_shape(C2, square), same_size(_, [C1, C2]).
car(C) :- extract_op_and_chld(C, side_by_side, [C1, C2]), extract_shape(C1, circle),
    extract_shape(C2, circle), same_size(_, [C1, C2]), same_color(_, [C1, C2]).
tower(C) :- extract_op_and_chld(C, stack, L), same_shape(square, L), same_size(_, L),
    length(L, N), N >= 2, N =< 3.
wagon(C) :- extract_op_and_chld(C, side_by_side, L), same_shape(square, L), same_size(_, L),
    length(L, N), N >= 2, N =< 3.
traffic_light(C) :- extract_op_and_chld(C, stack, [C1, C2, C3]),
    same_shape(circle, [C1, C2, C3]), same_size(_, [C1, C2, C3]),
    extract_color(C1, red), extract_color(C2, yellow), extract_color(C3, green).
named_object(house).
named_object(car).
named_object(tower).
named_object(wagon).
named_object(traffic_light).
is_named_object(C, house) :- house(C).
is_named_object(C, car) :- car(C).
is_named_object(C, tower) :- tower(C).
is_named_object(C, wagon) :- wagon(C).
is_named_object(C, traffic_light) :- traffic_light(C).

% Depth-aware structure.
recursive_contains2(C, X, 0) :- contains(C, X).
recursive_contains2(C, X, I) :- contains(C, C1), recursive_contains2(C1, X, J), I is J + 1.
contains_composition(C, COMP) :- extract_operator(C, COMP).
contains_composition(C, COMP) :- recursive_contains2(C, C1, _), extract_operator(C1, COMP).
contains_composition_depth(C, COMP, 0) :- extract_operator(C, COMP).
contains_composition_depth(C, COMP, I) :- recursive_contains2(C, C1, J),
    extract_operator(C1, COMP), I is J + 1.

% Lists of objects.
same_attribute(L) :- same_shape(_, L).
same_attribute(L) :- same_color(_, L).
same_attribute(L) :- same_size(_, L).
same_non_size(L) :- same_shape(_, L).
same_non_size(L) :- same_color(_, L).
all_same(H, [H]).
all_same(H, [H|T]) :- all_same(H, T).
expand2([A, B], A, B).
expand4([A, B, C, D], A, B, C, D).
expand8([A, B, C, D, E, F, G, H], A, B, C, D, E, F, G, H).
expand9([A, B, C, D, E, F, G, H, I], A, B, C, D, E, F, G, H, I).

% Numbers and lists.
odd(N) :- N mod 2 =:= 1.
even(N) :- N mod 2 =:= 0.
first([H|_], H).
last([H], H).
last([_|T], X) :- last(T, X).
prepend(X, L, [X|L]).
droplast([_], []).
droplast([H|T], [H|T2]) :- droplast(T, T2).
middle([_|T], T2) :- droplast(T, T2).
getmiddle(L, X) :- length(L, N), odd(N), N1 is div(N, 2), nth0(N1, L, X).
dropmiddle(L, L1) :- getmiddle(L, X), delete(L, X, L1).
less_eq(N, N1) :- N =< N1.
less(N, N1) :- N < N1.
greater(N, N1) :- N > N1.
same(X, Y) :- X = Y.
different(X, Y) :- X \= Y.
