% KANDY ILP background knowledge: NATURAL encoding, MINIMAL KB (paper, supplementary §4.5.1).
%
% A sample is a term: an atomic shape is the atom Shape_Color_Size (triangle_red_small); a
% composition is Operator(ListOfChildren), e.g. stack([triangle_red_small, square_red_small]).
% Plain Prolog (no module): nesybench pastes it into the Aleph .b file it exports and loads it
% into a module of its own when it evaluates a learned theory.
% Helpers that are not offered to the learner (no mode declaration): the attribute domain
% (shape/1, color/1, size/1) and shape_props/4.
% Built-ins the learner may also use: atom/1, reverse/2, length/2.

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

% Structure: a composition is a unary term whose argument is the list of children.
extract_operator(C, COMP) :- compound(C), functor(C, COMP, 1).
extract_children(C, L) :- compound(C), functor(C, _, 1), arg(1, C, L).
extract_op_and_chld(C, COMP, L) :- compound(C), functor(C, COMP, 1), arg(1, C, L).

contains(C, X) :- extract_children(C, L), member(X, L).
recursive_contains(C, X) :- contains(C, X), atom(X).
recursive_contains(C, X) :- contains(C, C1), recursive_contains(C1, X).
