% KANDY Hard task 8: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
valid(C) :- contains(C, C1), traffic_light(C1).
