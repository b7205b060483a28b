:- module(ski_vocab,
          [ gt/3, lt/3, ge/3, le/3,     % +Sample, +Feature, +Threshold: comparisons
            hot/2,                      % +Sample, +Feature: a 0/1 feature is 1
            base/3,                     % +Sample, +Position, +Code: splice base (IUPAC code)
            seq/3,                      % +Sample, +Position, +Codes: consecutive bases
            m_of_n/2,                   % +M, +Literals: at least M literals hold
            code_bases/2                % ?Code, ?Bases: IUPAC code -> list of bases
          ]).
/** <module> The vocabulary of the knowledge-injection rules (the files in kb/ski)

A rule body is made of these literals, of `\+`, `,` and `;`, and of calls to the concepts
the same file defines (`exon_intron(X)`, `class(X, ie)`). A sample is a dict mapping feature
names to numbers, so the rules run in Prolog as written (tests compare that with the
networks built from them); prolog/ski/compile.pl turns each clause into a network
description instead.
*/
:- use_module(library(lists)).
:- use_module(library(apply)).

value(X, F, V) :- get_dict(F, X, V).

gt(X, F, C) :- value(X, F, V), V > C.
lt(X, F, C) :- value(X, F, V), V < C.
ge(X, F, C) :- value(X, F, V), V >= C.
le(X, F, C) :- value(X, F, V), V =< C.
hot(X, F)   :- value(X, F, V), V >= 0.5.

%!  code_bases(?Code, ?Bases) is nondet.
%   IUPAC nucleotide codes used by Towell & Shavlik's splice-junction theory.
code_bases(a, [a]).
code_bases(c, [c]).
code_bases(g, [g]).
code_bases(t, [t]).
code_bases(m, [a, c]).
code_bases(r, [a, g]).
code_bases(y, [c, t]).
code_bases(k, [g, t]).
code_bases(s, [c, g]).
code_bases(w, [a, t]).
code_bases(n, [a, c, g, t]).

base_feature(Pos, Base, F) :- atomic_list_concat([Pos, Base], F).

base(X, Pos, Code) :-
    code_bases(Code, Bases),
    member(B, Bases),
    base_feature(Pos, B, F),
    hot(X, F), !.

%!  seq(+X, +Pos, +Codes) is semidet.
%   The bases from Pos on (position 0 does not exist: -1 is followed by 1) match Codes,
%   an atom of IUPAC codes such as 'MAGGTRAGT' (case-insensitive).
seq(X, Pos, Codes) :-
    seq_positions(Pos, Codes, Pairs),
    forall(member(P-C, Pairs), base(X, P, C)).

seq_positions(Pos, Codes, Pairs) :-
    downcase_atom(Codes, Lower),
    atom_chars(Lower, Chars),
    positions(Pos, Chars, Pairs).

positions(_, [], []).
positions(P, [C|Cs], [P-C|Ps]) :-
    ( P =:= -1 -> Next = 1 ; Next is P + 1 ),
    positions(Next, Cs, Ps).

m_of_n(M, Literals) :-
    aggregate_all(count, (member(L, Literals), holds(L)), N),
    N >= M.

holds(gt(X, F, C)) :- gt(X, F, C).
holds(lt(X, F, C)) :- lt(X, F, C).
holds(ge(X, F, C)) :- ge(X, F, C).
holds(le(X, F, C)) :- le(X, F, C).
holds(hot(X, F)) :- hot(X, F).
holds(base(X, P, C)) :- base(X, P, C).
holds(seq(X, P, C)) :- seq(X, P, C).
holds(\+ L) :- \+ holds(L).
