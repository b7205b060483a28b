%   KANDY background knowledge, part: families of compositional operators (paper,
%   supplementary §4.5). Included by kb/kandy/bk.pl and the mid-size ILP knowledge bases.

non_diag(stack).
non_diag(side_by_side).
non_diag(stack_reduce_bb).
non_diag(side_by_side_reduce_bb).
non_diag(grid).
diag(diag_ul_lr).
diag(diag_ll_ur).
quadrant_ul(quadrant_ul).
quadrant_ur(quadrant_ur).
quadrant_ll(quadrant_ll).
quadrant_lr(quadrant_lr).
quadrant(quadrant_ul).
quadrant(quadrant_ur).
quadrant(quadrant_ll).
quadrant(quadrant_lr).
quadrant_or_center(in).
quadrant_or_center(X) :- quadrant(X).
non_random(X) :- diag(X).
non_random(X) :- non_diag(X).
non_random(X) :- quadrant(X).
any_composition(X) :- non_random(X).
any_composition(random).
line(X) :- non_diag(X), X \= grid.
line(X) :- diag(X).
