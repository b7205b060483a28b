%   KANDY background knowledge, part: attribute domain and attributes of atomic shapes
%   (paper, supplementary §4.5 / §4.5.1). Included by kb/kandy/bk.pl and by every ILP
%   knowledge base in kb/kandy/ilp/; plain clauses, no directives, so that the Aleph export
%   can paste it whole.

%   Domain of atomic shapes.
color(red).
color(green).
color(blue).
color(cyan).
color(magenta).
color(yellow).
shape(triangle).
shape(circle).
shape(square).
size(small).
size(large).

%!  shape_props(+T, ?Shape, ?Color, ?Size) is semidet.
%   T is an atomic shape `Shape_Color_Size`.
shape_props(T, SH, CO, SZ) :-
    atom(T),
    atomic_list_concat([SH, CO, SZ], '_', T).

extract_shape(T, SH) :- shape_props(T, SH, _, _), shape(SH).
extract_color(T, CO) :- shape_props(T, _, CO, _), color(CO).
extract_size(T, SZ) :- shape_props(T, _, _, SZ), size(SZ).

exists_shape(SH, [H|_]) :- extract_shape(H, SH).
exists_shape(SH, [_|T]) :- exists_shape(SH, T).
same_shape(SH, [H]) :- extract_shape(H, SH).
same_shape(SH, [H|T]) :- extract_shape(H, SH), same_shape(SH, T).
exists_color(CO, [H|_]) :- extract_color(H, CO).
exists_color(CO, [_|T]) :- exists_color(CO, T).
same_color(CO, [H]) :- extract_color(H, CO).
same_color(CO, [H|T]) :- extract_color(H, CO), same_color(CO, T).
exists_size(SZ, [H|_]) :- extract_size(H, SZ).
exists_size(SZ, [_|T]) :- exists_size(SZ, T).
same_size(SZ, [H]) :- extract_size(H, SZ).
same_size(SZ, [H|T]) :- extract_size(H, SZ), same_size(SZ, T).
