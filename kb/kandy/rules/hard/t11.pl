% KANDY Hard task 11: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- named_object(X),
    forall(contains(C, C1), (contains(C1, C2), is_named_object(C2, X))).
