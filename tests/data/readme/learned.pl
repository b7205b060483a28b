% A tiny "learned" RuDaS program for the README examples (any predicate names are accepted;
% the metrics count what it derives on the dataset's evaluation support).
0.9::p1(X, Y) :- p2(X, Y).
