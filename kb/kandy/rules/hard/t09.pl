% KANDY Hard task 9: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- shape(SH),
    forall(contains(C, C1), (contains(C1, C2), extract_shape(C2, SH))).
