% KANDY Hard task 10: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- color(CO),
    forall(contains(C, C1), (contains(C1, C2), extract_color(C2, CO))).
