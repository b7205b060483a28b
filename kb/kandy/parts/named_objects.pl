%   KANDY background knowledge, part: named compound objects (Easy tasks 15-19, reused by
%   Hard; paper, supplementary §4.5). Included by kb/kandy/bk.pl and the mid-size ILP
%   knowledge bases.

%!  house(+C) is semidet.
%   A triangle stacked on a square of the same size.
house(C) :-
    extract_op_and_chld(C, stack, [C1, C2]),
    extract_shape(C1, triangle),
    extract_shape(C2, square),
    same_size(_, [C1, C2]).

%!  car(+C) is semidet.
%   Two side-by-side circles of the same size and colour.
car(C) :-
    extract_op_and_chld(C, side_by_side, [C1, C2]),
    extract_shape(C1, circle),
    extract_shape(C2, circle),
    same_size(_, [C1, C2]),
    same_color(_, [C1, C2]).

%!  tower(+C) is semidet.
%   Two or three stacked squares of the same size.
tower(C) :-
    extract_op_and_chld(C, stack, L),
    same_shape(square, L),
    same_size(_, L),
    length(L, N), N >= 2, N =< 3.

%!  wagon(+C) is semidet.
%   Two or three side-by-side squares of the same size.
wagon(C) :-
    extract_op_and_chld(C, side_by_side, L),
    same_shape(square, L),
    same_size(_, L),
    length(L, N), N >= 2, N =< 3.

%!  traffic_light(+C) is semidet.
%   Red, yellow and green circles of the same size, stacked in that order.
traffic_light(C) :-
    extract_op_and_chld(C, stack, [C1, C2, C3]),
    same_shape(circle, [C1, C2, C3]),
    same_size(_, [C1, C2, C3]),
    extract_color(C1, red),
    extract_color(C2, yellow),
    extract_color(C3, green).

named_object(house).
named_object(car).
named_object(tower).
named_object(wagon).
named_object(traffic_light).

%!  is_named_object(?C, ?Name) is nondet.
is_named_object(C, house) :- house(C).
is_named_object(C, car) :- car(C).
is_named_object(C, tower) :- tower(C).
is_named_object(C, wagon) :- wagon(C).
is_named_object(C, traffic_light) :- traffic_light(C).
