% KANDY ILP background knowledge: POINTER encoding, MID-SIZE KB (paper, main text §4 and supplementary §4.5,
% with the pointer-encoding differences of §4.5.3).
%
% The paper's 39 predicates: the clauses of the §4.5 listing after its domain definitions
% (which the paper removes for ILP) without the named objects house/1 ... is_named_object/2,
% which supplementary §4.5.2 lists among the "cheat" predicates of the LARGE KB
% (kb/kandy/ilp/<encoding>_large.pl). See docs/guides/aleph.md for the list.
%
% Every composition is a constant defined by a fact defined_as(Object, Operator, Children),
% e.g. defined_as(c000001, stack, [triangle_red_small, c000002]); an example valid(s00001) names
% its sample, linked to its root object by sample_is(s00001, c000000). Atomic shapes are the
% atoms Shape_Color_Size, as in the natural encoding. The exported .b file appends the
% defined_as/3 and sample_is/2 facts of the training samples after this text; the test-split
% facts live in <stem>_test.pl, hence the multifile declarations.
% Plain Prolog (no module): nesybench pastes it into the Aleph .b file it exports and loads it
% into a module of its own when it evaluates a learned theory.
% Helpers that are not offered to the learner (no mode declaration): the attribute domain
% (shape/1, color/1, size/1), shape_props/4, atomic_object/1 and the extract_* structure
% predicates (kept so that rules written for the natural encoding run after `sample_is(S, C)`).
% Built-ins the learner may also use: reverse/2, length/2, delete/3, nth0/3, member/2.
% The clauses live in kb/kandy/parts/ (shared with kb/kandy/bk.pl); the Aleph export
% pastes each included part in place, so the .b file stands alone.

:- include('../parts/structure_pointer.pl').
:- include('../parts/attributes.pl').
:- include('../parts/depth.pl').
:- include('../parts/lists.pl').
