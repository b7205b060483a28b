% KANDY Hard task 13: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
pseudo_palindrome([]).
pseudo_palindrome([_]).
pseudo_palindrome(L) :- middle(L, M), pseudo_palindrome(M),
    last(L, A), first(L, B), same_shape(_, [A, B]).
pseudo_palindrome(L) :- middle(L, M), pseudo_palindrome(M),
    last(L, A), first(L, B), same_color(_, [A, B]).
valid(C) :- extract_children(C, L), pseudo_palindrome(L).
