:- module(kandy_bk,
          [ color/1, shape/1, size/1,
            non_diag/1, diag/1, quadrant_ul/1, quadrant_ur/1, quadrant_ll/1, quadrant_lr/1,
            quadrant/1, quadrant_or_center/1, non_random/1, any_composition/1, line/1,
            house/1, car/1, tower/1, wagon/1, traffic_light/1,
            named_object/1, is_named_object/2,
            shape_props/4, extract_shape/2, extract_color/2, extract_size/2,
            exists_shape/2, same_shape/2, exists_color/2, same_color/2,
            exists_size/2, same_size/2,
            contains/2, recursive_contains/2, recursive_contains2/3,
            contains_composition/2, contains_composition_depth/3,
            extract_operator/2, extract_children/2, extract_op_and_chld/3,
            same_attribute/1, same_non_size/1, all_same/2,
            expand2/3, expand4/5, expand8/9, expand9/10,
            odd/1, even/1, first/2, last/2, prepend/3, droplast/2, middle/2,
            getmiddle/2, dropmiddle/2, less_eq/2, less/2, greater/2, same/2, different/2
          ]).
/** <module> KANDY background knowledge (natural encoding)

The background knowledge of the KANDY paper, supplementary §4.5: every ground-truth /
rejection rule of the Easy and Hard curricula is written with these predicates (at most six
literals per clause). A sample is a term in the *natural encoding*: an atomic shape is the atom
`Shape_Color_Size` (e.g. `triangle_red_small`); a composition is a unary term whose functor is
the operator and whose argument is the list of children, e.g.
`side_by_side([circle_blue_large, stack([square_red_small, square_red_small])])`.

Two corrections to the printed listing (its typesetting garbled them): the colour list reads
red, green, blue, cyan, magenta, yellow, and `different/2` is `X \= Y`. `shape_props/4` splits
the atom with atomic_list_concat/3 instead of a round trip through strings: same answers,
an order of magnitude faster in rejection sampling.

Usage from SWI-Prolog:
==
?- use_module(kb/kandy/bk).
?- contains(stack([triangle_red_small, square_red_small]), X), extract_shape(X, square).
X = square_red_small.
==
*/
:- use_module(library(lists), [member/2, nth0/3, delete/3]).


%   The parts are shared with the ILP knowledge bases in kb/kandy/ilp/ (one text, several
%   knowledge bases); see kb/kandy/parts/.
:- include('parts/attributes.pl').
:- include('parts/families.pl').
:- include('parts/named_objects.pl').
:- include('parts/structure_natural.pl').

%   Depth-aware structure, as printed in the paper (the base case also checks that C is a
%   composition, which contains/2 already implies in the natural encoding).
recursive_contains2(C, X, 0) :- contains(C, X), functor(C, _, 1).
recursive_contains2(C, X, I) :-
    contains(C, C1),
    recursive_contains2(C1, X, J),
    I is J + 1.

contains_composition(C, COMP) :- extract_operator(C, COMP).
contains_composition(C, COMP) :-
    recursive_contains2(C, C1, _),
    extract_operator(C1, COMP).

contains_composition_depth(C, COMP, 0) :- extract_operator(C, COMP).
contains_composition_depth(C, COMP, I) :-
    recursive_contains2(C, C1, J),
    extract_operator(C1, COMP),
    I is J + 1.

:- include('parts/lists.pl').
