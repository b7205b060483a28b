% KANDY Hard task 12: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- extract_children(C, L), reverse(L, L).
