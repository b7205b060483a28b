%   KANDY background knowledge, part: lists of objects, numbers and lists (paper,
%   supplementary §4.5). Included by kb/kandy/bk.pl and the mid-size ILP knowledge bases.
%   Uses member/2, nth0/3 and delete/3 of library(lists).

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

%   Numbers and lists.
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
