% KANDY Hard task 0: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- contains(C, C1), extract_children(C1, L), length(L, 2), same_color(_, L).
