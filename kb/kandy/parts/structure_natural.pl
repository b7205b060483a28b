%   KANDY background knowledge, part: structure of compositions in the NATURAL encoding
%   (a composition is a unary term Operator(ListOfChildren)). Included by kb/kandy/bk.pl and
%   the natural ILP knowledge bases.

extract_operator(C, COMP) :- compound(C), functor(C, COMP, 1).
extract_children(C, L) :- compound(C), functor(C, _, 1), arg(1, C, L).
extract_op_and_chld(C, COMP, L) :- compound(C), functor(C, COMP, 1), arg(1, C, L).

%!  contains(+C, ?X) is nondet.
%   X is a direct child of composition C.
contains(C, X) :- extract_children(C, L), member(X, L).

%!  recursive_contains(+C, ?X) is nondet.
%   X is an atomic shape anywhere below C.
recursive_contains(C, X) :- contains(C, X), atom(X).
recursive_contains(C, X) :- contains(C, C1), recursive_contains(C1, X).
