:- use_module(library(aggregate)).
0.3::score(a, 3). 0.6::score(b, 5). 0.5::score(c, 4).
best(max<S>) :- score(_, S).
query(best(B)).
