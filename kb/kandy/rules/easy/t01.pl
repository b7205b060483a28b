% KANDY Easy task 1: ground-truth / rejection rule (paper, supplementary §4.6.1).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- contains(C, C1), extract_shape(C1, square).
