%   KANDY background knowledge, part: depth-aware structure for the mid-size ILP knowledge
%   bases (either encoding: it only uses contains/2 and extract_operator/2).

recursive_contains2(C, X, 0) :- contains(C, X).
recursive_contains2(C, X, I) :- contains(C, C1), recursive_contains2(C1, X, J), I is J + 1.
contains_composition(C, COMP) :- extract_operator(C, COMP).
contains_composition(C, COMP) :- recursive_contains2(C, C1, _), extract_operator(C1, COMP).
contains_composition_depth(C, COMP, 0) :- extract_operator(C, COMP).
contains_composition_depth(C, COMP, I) :- recursive_contains2(C, C1, J),
    extract_operator(C1, COMP), I is J + 1.
