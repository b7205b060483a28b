% KANDY Hard task 16: ground-truth / rejection rule (paper, supplementary §4.6.2).
% Written over the background knowledge in kb/kandy/bk.pl (module kandy_bk).
tmp(C) :- contains(C, C1), is_named_object(C1, traffic_light).
tmp2(C) :- contains(C, C2), is_named_object(C2, house).
valid(C) :- contains(C, C1), is_named_object(C1, traffic_light),
    contains(C, C2), is_named_object(C2, car).
valid(C) :- contains(C, C1), is_named_object(C1, house),
    contains(C, C2), is_named_object(C2, tower).
valid(C) :- \+ tmp(C), \+ tmp2(C).
