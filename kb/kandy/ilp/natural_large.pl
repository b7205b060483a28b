% KANDY ILP background knowledge: NATURAL encoding, LARGE KB (paper, main text footnote 9 and supplementary §4.5.2 on top of §4.5).
%
% The MID-SIZE KB plus the "cheat" predicates that encode the curricula's ground-truth rules:
% the named objects (house/1, car/1, tower/1, wagon/1, traffic_light/1, is_named_object/2),
% symmetric_list/1, forall_shared_shape/2, forall_shared_color/2, forall_shared_named_obj/2,
% pseudo_palindrome/1, pseudo_palindrome2/1.
%
% A sample is a term: an atomic shape is the atom Shape_Color_Size (triangle_red_small); a
% composition is Operator(ListOfChildren), e.g. stack([triangle_red_small, square_red_small]).
% Plain Prolog (no module): nesybench pastes it into the Aleph .b file it exports and loads it
% into a module of its own when it evaluates a learned theory.
% Helpers that are not offered to the learner (no mode declaration): the attribute domain
% (shape/1, color/1, size/1, named_object/1) and shape_props/4.
% Built-ins the learner may also use: atom/1, reverse/2, length/2, delete/3, nth0/3, member/2.
% The clauses live in kb/kandy/parts/ (shared with kb/kandy/bk.pl); the Aleph export
% pastes each included part in place, so the .b file stands alone.

:- include('../parts/attributes.pl').
:- include('../parts/structure_natural.pl').
:- include('../parts/named_objects.pl').
:- include('../parts/depth.pl').
:- include('../parts/lists.pl').
:- include('../parts/cheat.pl').
