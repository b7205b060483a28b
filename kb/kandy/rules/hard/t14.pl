% KANDY Hard task 14: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
pseudo_palindrome2([]).
pseudo_palindrome2([_]).
pseudo_palindrome2(L) :- middle(L, M), pseudo_palindrome2(M),
    last(L, A), first(L, B), same_shape(_, [A, B]).
pseudo_palindrome2(L) :- middle(L, M), pseudo_palindrome2(M),
    last(L, A), first(L, B), same_color(_, [A, B]).
pseudo_palindrome2(L) :- middle(L, M), pseudo_palindrome2(M),
    last(L, C1), first(L, C2), is_named_object(C1, X), is_named_object(C2, X).
valid(C) :- extract_children(C, L), pseudo_palindrome2(L).
