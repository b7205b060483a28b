valid(X) :- assertz(seen(X)).
