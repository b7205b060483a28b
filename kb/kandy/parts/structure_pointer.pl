%   KANDY background knowledge, part: structure of compositions in the POINTER encoding
%   (paper, supplementary §4.5.3): a composition is a constant with a fact
%   defined_as(Object, Operator, Children). Included by the pointer ILP knowledge bases.

:- dynamic defined_as/3.
:- multifile defined_as/3.
:- dynamic sample_is/2.
:- multifile sample_is/2.

extract_operator(C, COMP) :- atom(C), defined_as(C, COMP, _).
extract_children(C, L) :- atom(C), defined_as(C, _, L).
extract_op_and_chld(C, COMP, L) :- atom(C), defined_as(C, COMP, L).
atomic_object(X) :- atom(X), \+ defined_as(X, _, _).

contains(C, X) :- defined_as(C, _, L), member(X, L).
recursive_contains(C, X) :- contains(C, X), atomic_object(X).
recursive_contains(C, X) :- contains(C, C1), recursive_contains(C1, X).
