:- module(ski_compile,
          [ compile_rules/6             % +Module, +Features, +Classes, -Kind, -Msg, -Concepts
          ]).
/** <module> Rule bodies to network descriptions

Every clause of a knowledge base loaded (sandboxed) into Module becomes a tree of dicts that
Python turns into layers (nesybench/ski/rules.py); the logic of what a literal means lives
here:

  and(Args)  or(Args)  not(Arg)          connectives (`,` `;` `\+`)
  cmp(Feature, Rel, Value)               gt/lt/ge/le literals, Rel in ">", "<", ">=", "=<"
  var(Feature)                           hot/2, and one base of base/3
  mofn(M, Args)                          m_of_n/2
  ref(Concept)                           a call of a concept defined by the rules:
                                         class(X, L) is concept "class:L", p(X) is "p"
  true                                   the empty body

Heads are `class(X, Label)` (Label one of Classes) or `p(X)`; X is the sample, and every
literal must be about that same X. Features and labels are checked against the data set.
*/
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(error)).
:- use_module(vocab).

%!  compile_rules(+Module, +Features:list, +Classes:list, -Kind, -Msg, -Concepts) is det.
%
%   Kind is `ok` (Msg = "") and Concepts a list of _{name:Name, clauses:[Tree, ...]}, or
%   Kind is `error` with Msg saying what is wrong (Concepts = []).
compile_rules(Module, Features0, Classes0, Kind, Msg, Concepts) :-
    maplist(to_atom, Features0, Features),
    maplist(to_atom, Classes0, Classes),
    catch(( concepts(Module, Features, Classes, Concepts), Kind = ok, Msg = "" ),
          ski_error(Msg0),
          ( Kind = error, Msg = Msg0, Concepts = [] )).

to_atom(S, A) :- atom_string(A, S).

concepts(Module, Features, Classes, Concepts) :-
    findall(N/A, ( current_predicate(Module:N/A), functor(H, N, A),
                   \+ predicate_property(Module:H, imported_from(_)) ), PIs0),
    sort(PIs0, PIs),
    (   PIs == [] -> fail_with("the knowledge base defines no rules", []) ; true ),
    Ctx = ctx(Module, Features, Classes, PIs),
    findall(Name-Tree,
            ( member(N/A, PIs),
              functor(Head, N, A),
              clause(Module:Head, Body),
              head_concept(Head, Classes, X, Name),
              body_tree(Body, X, Ctx, Name, Tree) ),
            Pairs),
    group_concepts(Pairs, Concepts).

head_concept(class(X, L), Classes, X, Name) :- !,
    must_be_sample(X, class(X, L)),
    (   atom(L), memberchk(L, Classes)
    ->  format(string(Name), "class:~w", [L])
    ;   fail_with("a rule concludes class ~q, which is not a class of the data set (~w)",
                  [L, Classes])
    ).
head_concept(Head, _, X, Name) :-
    Head =.. [N, X], !,
    must_be_sample(X, Head),
    atom_string(N, Name).
head_concept(Head, _, _, _) :-
    functor(Head, N, A),
    fail_with("rule head ~w/~w: heads must be class(X, Label) or concept(X)", [N, A]).

must_be_sample(X, Head) :-
    (   var(X) -> true
    ;   fail_with("rule head ~q: the first argument must be the sample variable", [Head])
    ).

group_concepts(Pairs, Concepts) :-
    findall(N, member(N-_, Pairs), Ns0),
    list_to_set(Ns0, Ns),
    findall(_{name:N, clauses:Ts},
            ( member(N, Ns), findall(T, member(N-T, Pairs), Ts) ),
            Concepts).

fail_with(Fmt, Args) :-
    format(string(Msg), Fmt, Args),
    throw(ski_error(Msg)).

%   body_tree(+Body, +X, +Ctx, +Concept, -Tree)
body_tree(V, _, _, C, _) :- var(V), !,
    fail_with("rule for ~w: a variable used as a literal", [C]).
body_tree(true, _, _, _, _{op:"true"}) :- !.
body_tree((A, B), X, Ctx, C, _{op:"and", args:Ts}) :- !,
    conj_list((A, B), Ls),
    maplist(body_tree_(X, Ctx, C), Ls, Ts).
body_tree((A ; B), X, Ctx, C, _{op:"or", args:Ts}) :- !,
    disj_list((A ; B), Ls),
    maplist(body_tree_(X, Ctx, C), Ls, Ts).
body_tree(\+ A, X, Ctx, C, _{op:"not", args:[T]}) :- !,
    body_tree(A, X, Ctx, C, T).
body_tree(Lit, X, Ctx, C, _{op:"cmp", feature:F, rel:Rel, value:V}) :-
    Lit =.. [Op, X1, F0, V0], rel(Op, Rel), !,
    same_sample(X, X1, Lit, C),
    feature(F0, Ctx, C, F),
    (   number(V0) -> V is V0
    ;   fail_with("rule for ~w: ~q compares with ~q, which is not a number", [C, Lit, V0])
    ).
body_tree(hot(X1, F0), X, Ctx, C, _{op:"var", feature:F}) :- !,
    same_sample(X, X1, hot(X1, F0), C),
    feature(F0, Ctx, C, F).
body_tree(base(X1, P, Code), X, Ctx, C, Tree) :- !,
    same_sample(X, X1, base(X1, P, Code), C),
    base_tree(P, Code, Ctx, C, Tree).
body_tree(seq(X1, P, Codes), X, Ctx, C, _{op:"and", args:Ts}) :- !,
    same_sample(X, X1, seq(X1, P, Codes), C),
    (   integer(P), atom(Codes) -> true
    ;   fail_with("rule for ~w: seq(X, Position, 'CODES') needs an integer and an atom", [C])
    ),
    ski_vocab:seq_positions(P, Codes, Pairs),
    maplist(base_tree_(Ctx, C), Pairs, Ts).
body_tree(m_of_n(M, Ls), X, Ctx, C, _{op:"mofn", m:M, args:Ts}) :- !,
    (   integer(M), is_list(Ls), length(Ls, N), M >= 0, M =< N -> true
    ;   fail_with("rule for ~w: m_of_n(M, Literals) needs 0 =< M =< length(Literals)", [C])
    ),
    maplist(body_tree_(X, Ctx, C), Ls, Ts).
body_tree(class(X1, L), X, ctx(M, F, Classes, PIs), C, _{op:"ref", concept:Name}) :- !,
    same_sample(X, X1, class(X1, L), C),
    (   atom(L), memberchk(L, Classes) -> format(string(Name), "class:~w", [L])
    ;   fail_with("rule for ~w refers to class ~q, which is not a class of the data set",
                  [C, L])
    ),
    _ = ctx(M, F, Classes, PIs).
body_tree(Lit, X, ctx(_, _, _, PIs), C, _{op:"ref", concept:Name}) :-
    Lit =.. [N, X1], memberchk(N/1, PIs), !,
    same_sample(X, X1, Lit, C),
    atom_string(N, Name).
body_tree(Lit, _, _, C, _) :-
    fail_with("rule for ~w: ~q is not a literal of the rule language (gt/lt/ge/le, hot, base, seq, m_of_n, class, or a concept the file defines)",
              [C, Lit]).

%   (no yall lambdas here: they would copy the unbound sample variable X)
body_tree_(X, Ctx, C, L, T) :- body_tree(L, X, Ctx, C, T).
base_tree_(Ctx, C, Pos-Code, T) :- base_tree(Pos, Code, Ctx, C, T).

rel(gt, ">").
rel(lt, "<").
rel(ge, ">=").
rel(le, "=<").

same_sample(X, X1, Lit, C) :-
    (   X1 == X -> true
    ;   fail_with("rule for ~w: ~q is not about the rule's sample variable", [C, Lit])
    ).

feature(F0, ctx(_, Features, _, _), C, F) :-
    (   atom(F0), memberchk(F0, Features) -> atom_string(F0, F)
    ;   fail_with("rule for ~w names feature ~q, which the data set lacks", [C, F0])
    ).

base_tree(P, Code0, Ctx, C, Tree) :-
    (   atom(Code0), downcase_atom(Code0, Code), ski_vocab:code_bases(Code, Bases) -> true
    ;   fail_with("rule for ~w: ~q is not a nucleotide code", [C, Code0])
    ),
    findall(_{op:"var", feature:F},
            ( member(B, Bases), ski_vocab:base_feature(P, B, F0), feature(F0, Ctx, C, F) ),
            Vars),
    (   Vars = [One] -> Tree = One ; Tree = _{op:"or", args:Vars} ).

conj_list((A, B), L) :- !, conj_list(A, LA), conj_list(B, LB), append(LA, LB, L).
conj_list(A, [A]).
disj_list((A ; B), L) :- !, disj_list(A, LA), disj_list(B, LB), append(LA, LB, L).
disj_list(A, [A]).
