%   KANDY background knowledge, part: the "cheat" predicates of the LARGE ILP knowledge base
%   (paper, main text footnote 9 and supplementary §4.5.2): they encode the ground-truth /
%   rejection rules of the curricula. The named objects (house/1 ... is_named_object/2) live in
%   named_objects.pl; this part adds the Easy symmetric_list/1 and the Hard forall_shared_*/2
%   and pseudo_palindrome*/1 predicates. Included by the large ILP knowledge bases only.
%   One change to the printed text: forall_shared_*/2 first enumerate their constant (shape/1,
%   color/1, named_object/1, as the ground-truth rules of Hard tasks 9-11 do), so that called
%   with an unbound second argument (as Aleph does for a #constant) they bind it instead of
%   succeeding with it unbound.

symmetric_list(L) :- reverse(L, L).

forall_shared_shape(C, SH) :-
    shape(SH),
    forall(contains(C, C1), (contains(C1, C2), extract_shape(C2, SH))).
forall_shared_color(C, CO) :-
    color(CO),
    forall(contains(C, C1), (contains(C1, C2), extract_color(C2, CO))).
forall_shared_named_obj(C, X) :-
    named_object(X),
    forall(contains(C, C1), (contains(C1, C2), is_named_object(C2, X))).

pseudo_palindrome([]).
pseudo_palindrome([_]).
pseudo_palindrome(L) :- middle(L, M), pseudo_palindrome(M),
    last(L, A), first(L, B), same_shape(_, [A, B]).
pseudo_palindrome(L) :- middle(L, M), pseudo_palindrome(M),
    last(L, A), first(L, B), same_color(_, [A, B]).

pseudo_palindrome2([]).
pseudo_palindrome2([_]).
pseudo_palindrome2(L) :- middle(L, M), pseudo_palindrome2(M),
    last(L, A), first(L, B), same_shape(_, [A, B]).
pseudo_palindrome2(L) :- middle(L, M), pseudo_palindrome2(M),
    last(L, A), first(L, B), same_color(_, [A, B]).
pseudo_palindrome2(L) :- middle(L, M), pseudo_palindrome2(M),
    last(L, C1), first(L, C2), is_named_object(C1, X), is_named_object(C2, X).
