% KANDY Easy task 12: ground-truth / rejection rule (paper, supplementary §4.6.1).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- extract_children(C, L), last(L, C1), member(C2, L),
    extract_shape(C1, triangle), extract_color(C1, red), extract_color(C2, blue).
