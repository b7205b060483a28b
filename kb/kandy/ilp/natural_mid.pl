% KANDY ILP background knowledge: NATURAL encoding, MID-SIZE KB (paper, main text §4 and supplementary §4.5).
%
% The paper's 39 predicates: the clauses of the §4.5 listing after its domain definitions
% (which the paper removes for ILP) without the named objects house/1 ... is_named_object/2,
% which supplementary §4.5.2 lists among the "cheat" predicates of the LARGE KB
% (kb/kandy/ilp/<encoding>_large.pl). See docs/guides/aleph.md for the list.
%
% A sample is a term: an atomic shape is the atom Shape_Color_Size (triangle_red_small); a
% composition is Operator(ListOfChildren), e.g. stack([triangle_red_small, square_red_small]).
% Plain Prolog (no module): nesybench pastes it into the Aleph .b file it exports and loads it
% into a module of its own when it evaluates a learned theory.
% Helpers that are not offered to the learner (no mode declaration): the attribute domain
% (shape/1, color/1, size/1) and shape_props/4.
% Built-ins the learner may also use: atom/1, reverse/2, length/2, delete/3, nth0/3, member/2.
% The clauses live in kb/kandy/parts/ (shared with kb/kandy/bk.pl); the Aleph export
% pastes each included part in place, so the .b file stands alone.

:- include('../parts/attributes.pl').
:- include('../parts/structure_natural.pl').
:- include('../parts/depth.pl').
:- include('../parts/lists.pl').
