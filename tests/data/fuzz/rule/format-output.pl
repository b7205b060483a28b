valid(X) :- format("hi~~n"), X = X.
