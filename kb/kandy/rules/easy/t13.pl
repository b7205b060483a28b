% KANDY Easy task 13: ground-truth / rejection rule (paper, supplementary §4.6.1).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- recursive_contains(C, C1), recursive_contains(C, C2),
    same_color(_, [C1, C2]), extract_shape(C1, triangle), extract_shape(C2, square).
