% KANDY Hard task 15: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- extract_children(C, L), length(L, N), odd(N), same_color(_, L).
valid(C) :- extract_children(C, L), length(L, N), even(N), same_shape(_, L).
