% MNIST-Addition knowledge in Prolog: label(+Digits, ?Label, ?Value).
% (Same semantics as addition.lp; the counter evaluates it on every world.)
label(Digits, sum, S) :- sum_list(Digits, S).
