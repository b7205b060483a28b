% A tiny "learned" KANDY theory for the README's ilp-eval example.
valid(X) :- contains(X, Y), extract_shape(Y, triangle).
