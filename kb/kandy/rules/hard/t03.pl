% KANDY Hard task 3: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- contains(C, C1), extract_children(C1, L), length(L, 3), same_shape(_, L).
