:- module(problog_ground,
          [ pg_ground/3,                % +Program, +Limits, -Result
            pg_eval/2                   % +Expression, -Value
          ]).
/** <module> Ground ProbLog programs in SWI-Prolog

The relevant ground program of a ProbLog program for its queries and evidence, computed by a
meta-interpreter over the program's clauses held as *data*:

  * the clauses arrive as *data*, terms already parsed by ProbLog's reader and encoded as
    nested lists (see decode/3), so no text is read twice and no reader can see other
    clauses in a quoted atom than ProbLog saw. They are stored in a temporary module as
    facts and never called, so a program cannot reach any predicate of this process. A goal
    is either resolved against those facts, or it is one of the pure builtins of builtin/1
    (unification, comparison, arithmetic, type checks, term inspection), or it is refused;
  * atoms keep the names ProbLog's reader gives them: a quoted atom is its source text,
    quotes included, so `'abc'` and `abc` are different terms, as they are in ProbLog; a
    goal's own name is unquoted (ProbLog looks predicates up by their unquoted name);
  * arithmetic is ProbLog's: pg_eval/2 evaluates an expression with ProbLog's function
    table (Python module `nesybench.nesy.program.arith`, through janus), with integer `+` and `-`
    and integer comparisons computed here (the same results); `is/2` stores a float rounded
    to 15 decimals as ProbLog's constants do;
  * **phase 1** (tabled, d/2) finds the atoms of probabilistic predicates that may be true.
    Tabling makes left recursion and cycles terminate. Deterministic predicates (those that
    reach no probabilistic clause) run by plain resolution in clause order, so findall/3 and
    if-then-else see their answers in Prolog's order;
  * **phase 2** builds, for each relevant ground atom, the OR over its ground clause instances
    of the AND over their body literals, plus the choice literal of a probabilistic fact or an
    annotated-disjunction head (one choice per clause and substitution of all its variables,
    as ProbLog groups them). Nodes are hash-consed in tries.

Unsupported constructs (a cyclic ground program, findall/once over a probabilistic goal,
non-ground answers of a probabilistic predicate) end with `unsupported(What)`, so that the
caller can use ProbLog's own grounder instead.

The result is a term of integers, lists and atoms (janus turns it into Python lists): see
pg_ground/3.
*/
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(pairs)).
:- use_module(library(ordsets)).
:- use_module(safe_load, [with_time_limit/2]).

%!  pg_ground(+Program:list, +Limits:list, -Result) is det.
%
%   Ground Program, `[Clauses, Queries, Evidence]` in the encoding of decode/3:
%   `[Head, Id, Body, Kind, NVars]` per clause head (Kind `det`, `[fact, P]` or
%   `[ad, Index, P, Named]`, Named the indices of the clause's named variables),
%   `[J, Goal, VarIndices, NVars]` per query and `[K, Atom, Value, NVars]` per evidence
%   statement (Value 1 observed true, 0 false).
%   Limits holds `max_nodes(N)`, `max_depth(D)` (recursion of deterministic predicates),
%   `seconds(S)` and `stack_bytes(B)` (`none` for no limit).
%
%   Result is `[ok, Choices, Nodes, Labels, Evidence]`:
%     - Choices: `[Kind, Key, Values]` per choice (Kind `fact`, `ad` or `nn`; for `fact` the
%       Key is the encoded atom, for `nn` it is `[Net, Inputs, Decl]`), Values
%       `[[Index, Head, Prob], ...]` in index order;
%     - Nodes: node I (1-based) is `[0, Choice, Index]` (a literal), `[1|Kids]` (and) or
%       `[2|Kids]` (or); a kid -K is the negation of node K; node 0 is *true*;
%     - Labels: `[J, Values, Node]` per answer of query J (Node `false`: never true);
%     - Evidence: `[K, Atom, Node, Value]`;
%   terms in the encoding of encode/2, or `[Kind, Message]` with Kind `unsupported`,
%   `refused` (Message: Name/Arity), `budget` or `error`, or `[at, Id, Kind, Message]` for
%   an error (Kind `refused` or `error`) while proving a body of clause Id.
pg_ground(Program, Limits, Result) :-
    option_value(Limits, seconds, Seconds),
    catch(in_temporary_module(M, declare(M),
                              limited(Seconds, Limits, ground_data(M, Program, Limits, R0))),
          E, error_result(E, R0)),
    !,
    Result = R0.

declare(M) :-
    dynamic([M:'$def'/2, M:'$prob'/2, M:'$node'/2, M:'$choice'/2, M:'$cval'/3,
             M:'$ans'/3, M:'$max_depth'/1, M:'$det_calls'/1, M:'$rss_limit'/1]).

%   limited(+Seconds, +Limits, :Goal): once(Goal) under the time limit and the stack limit of
%   Limits; the tables of this grounding are dropped afterwards, whatever happens
limited(Seconds, Limits, Goal) :-
    arg(1, Goal, M),
    setup_call_cleanup(true, timed(Seconds, stack_bounded(Limits, Goal)),
                       ( abolish_table_subgoals(problog_ground:d(M, _)), flag(M, _, 0) )).

timed(none, Goal) :- !, once(Goal).
timed(Seconds, Goal) :- with_time_limit(Seconds, Goal).

stack_bounded(Limits, Goal) :-
    option_value(Limits, stack_bytes, Bytes),
    current_prolog_flag(stack_limit, Old),
    current_prolog_flag(table_space, OldTables),
    (   integer(Bytes)
    ->  statistics(stack, Used), Limit is min(Old, Used + Bytes),
        Tables is min(OldTables, Bytes)     % tabled answers (nat(X) has no end)
    ;   Limit = Old, Tables = OldTables
    ),
    setup_call_cleanup(( set_prolog_flag(stack_limit, Limit),
                         set_prolog_flag(table_space, Tables) ),
                       once(Goal),
                       ( set_prolog_flag(stack_limit, Old),
                         set_prolog_flag(table_space, OldTables) )).

option_value(Limits, Name, Value) :-
    Opt =.. [Name, V],
    (   memberchk(Opt, Limits) -> Value = V ; Value = none ).

error_result(pg_unsupported(What), [unsupported, What]) :- !.
error_result(pg_deep, [unsupported, Msg]) :- !,
    Msg = "a recursion deeper than 100,000 calls, also with every predicate tabled".
error_result(pg_cyclic, [unsupported, "a cyclic program"]) :- !.
error_result(pg_refused(F/A), [refused, Text]) :- !, format(string(Text), "~w/~w", [F, A]).
error_result(pg_at(Id, E), [at, Id, Kind, Msg]) :- !, error_result(E, [Kind, Msg]).
error_result(pg_budget(stack(N)), [budget, Msg]) :- !, format(string(Msg), "stack(~d)", [N]).
error_result(pg_budget(Msg), [budget, Msg]) :- !.
error_result(pg_error(arith(Msg)), [error, Text]) :- !,
    format(string(Text), "arithmetic: ~w", [Msg]).
error_result(pg_error(Msg), [error, Text]) :- !, format(string(Text), "~w", [Msg]).
error_result(time_limit_exceeded, [budget, time]) :- !.
error_result(error(resource_error(What), _), [budget, Msg]) :- !,
    format(string(Msg), "memory (~w)", [What]).
error_result(E, [error, Msg]) :- error_text(E, Msg).

error_text(E, Msg) :-
    catch(( '$messages':translate_message(E, Lines, []),
            with_output_to(string(Msg0),
                           print_message_lines(current_output, '', Lines)) ),
          _, fail), !,
    split_string(Msg0, "\n", " ", [Msg|_]).
error_text(E, Msg) :- format(string(Msg), "~q", [E]).

%   ground_data(+M, +Program, +Limits, -Result)
ground_data(M, Program, Limits, Result) :-
    option_value(Limits, max_depth, MaxDepth),
    assertz(M:'$max_depth'(MaxDepth)),
    option_value(Limits, stack_bytes, Bytes),
    (   integer(Bytes), resident_bytes(R0) -> RssLimit is R0 + Bytes ; RssLimit = none ),
    assertz(M:'$rss_limit'(RssLimit)),
    trie_new(DetCalls),
    assertz(M:'$det_calls'(DetCalls)),
    store_program(Program, M, Qs, Es),
    mark_probabilistic(M),
    check_instantiation_tests(M),
    compile_bodies(M),
    catch(ground_all(fast, M, Qs, Es, Limits, Result), Why,
          (   memberchk(Why, [pg_cyclic, pg_deep])
          ->  forget_ground(M),
              (   Why == pg_deep        % a deterministic loop: table every predicate
              ->  retag_all_probabilistic(M, Program)
              ;   true
              ),
              ground_all(cyclic, M, Qs, Es, Limits, Result)
          ;   throw(Why)
          )).

%   retag_all_probabilistic(+M, +Program): the program stored again, every predicate marked
%   probabilistic (so that every call goes through the tables)
retag_all_probabilistic(M, Program) :-
    forall(M:'$def'(F, A), ( functor(H, F, A), ext(H, _, _, _, E), retractall(M:E) )),
    retractall(M:'$def'(_, _)),
    store_program(Program, M, _, _),
    forall(( M:'$def'(F, A), \+ M:'$prob'(F, A) ), assertz(M:'$prob'(F, A))),
    compile_bodies(M).

forget_ground(M) :-
    retractall(M:'$det_calls'(_)), trie_new(T), assertz(M:'$det_calls'(T)),
    retractall(M:'$node'(_, _)), retractall(M:'$choice'(_, _)),
    retractall(M:'$cval'(_, _, _)), retractall(M:'$ans'(_, _, _)).

%   ground_all(+Mode, +M, +Queries, +Evidence, +Limits, -Result): Mode `fast` proves each
%   call once for all its answers and gives up on a cycle (pg_cyclic); `cyclic` proves each
%   ground atom with its ancestors, a call to an ancestor being false (ProbLog's cycle
%   breaking), after tabled evaluation has found the atoms that may be true
ground_all(Mode, M, Qs, Es, Limits, [ok, Choices, Nodes, Labels, Evidence]) :-
    option_value(Limits, max_nodes, MaxNodes),
    trie_new(CallT), trie_new(NodeT), trie_new(ChoiceT),
    S = st(CallT, NodeT, ChoiceT, 0, 0, MaxNodes, M, 0, Mode),
    maplist(query_label(S), Qs, Labelss), append(Labelss, Labels),
    maplist(evidence_node(S), Es, Evidence),
    arg(4, S, NNodes), arg(5, S, NChoices),
    node_list(M, 1, NNodes, Nodes),
    choice_list(M, 0, NChoices, Choices).

% -- the program as data -----------------------------------------------------------------

%   store_program(+Program, +M, -Queries, -Evidence): the clauses of Program stored in M,
%   its queries as q(J, Goal, Vars) and its evidence as e(K, Atom, Value)
store_program([Clauses, Queries, Evidence], M, Qs, Es) :- !,
    maplist(store_clause(M), Clauses),
    maplist(decode_query, Queries, Qs),
    maplist(decode_evidence, Evidence, Es).
store_program(P, _, _, _) :- throw(pg_error(bad_input(P))).

store_clause(M, [HeadE, Id, BodyE, KindE, NVars]) :- !,
    functor(Vs, v, NVars),
    decode(HeadE, Vs, Head),
    decode(BodyE, Vs, Body),
    decode_kind(KindE, Vs, Kind),
    functor(Head, F, A),
    (   M:'$def'(F, A) -> true ; assertz(M:'$def'(F, A)) ),
    ext(Head, Id, Body, Kind, E),
    assertz(M:E).
store_clause(_, C) :- throw(pg_error(bad_input(C))).

decode_kind(det, _, det) :- !.
decode_kind([fact, PE], Vs, fact(P)) :- !, decode(PE, Vs, P).
decode_kind([ad, I, PE, Named], Vs, ad(I, P, Vars)) :- !,
    decode(PE, Vs, P),
    vars_at(Named, Vs, VL),
    (   VL == [] -> Vars = v ; Vars =.. [v|VL] ).
decode_kind(K, _, _) :- throw(pg_error(bad_input(K))).

decode_query([J, GE, Ks, NVars], q(J, G, QVs)) :-
    functor(Vs, v, NVars),
    decode(GE, Vs, G),
    vars_at(Ks, Vs, QVs).

vars_at(Ks, Vs, L) :- maplist(var_at(Vs), Ks, L).

var_at(Vs, K, V) :- K1 is K + 1, arg(K1, Vs, V).

decode_evidence([K, AE, Value, NVars], e(K, A, Value)) :-
    functor(Vs, v, NVars),
    decode(AE, Vs, A).

%!  decode(+Encoded, +Vars, -Term) is det.
%
%   The term of a ProbLog term's encoding: a number as itself, `[v, K]` the variable
%   arg(K+1, Vars), `[a, Name]` an atom, `[n]` the empty list, `[s, Text]` a string,
%   `[l, Head, Tail]` a list cell, `[c, Name, Args]` a compound (tags and names arrive as
%   atoms or strings: janus passes Python's `str` as atoms).
decode(N, _, N) :- number(N), !.
decode([Tag|Rest], Vs, T) :- decode(Tag, Rest, Vs, T), !.
decode(E, _, _) :- throw(pg_error(bad_input(E))).

decode(v, [K], Vs, T) :- K1 is K + 1, arg(K1, Vs, T).
decode(a, [S], _, A) :- atom_string(A, S).
decode(n, [], _, []).
decode(s, [S], _, T) :- string_concat(S, "", T).
decode(l, [HE, TE], Vs, [H|T]) :- decode(HE, Vs, H), decode(TE, Vs, T).
decode(c, [S, AEs], Vs, T) :-
    atom_string(F, S),
    decode_list(AEs, Vs, As),
    compound_name_arguments(T, F, As).

decode_list([], _, []).
decode_list([E|Es], Vs, [T|Ts]) :- decode(E, Vs, T), decode_list(Es, Vs, Ts).

%!  encode(+Term, -Encoded) is det.
%
%   Term in the encoding of decode/3 (a variable as `["v"]`), for nesybench's Python side,
%   which rebuilds ProbLog's term from it.
encode(T, ["v"]) :- var(T), !.
encode(T, T) :- number(T), !.
encode([], ["n"]) :- !.
encode(T, ["a", S]) :- atom(T), !, atom_string(T, S).
encode(T, ["s", T]) :- string(T), !.
encode([H|T], ["l", EH, ET]) :- !, encode(H, EH), encode(T, ET).
encode(T, ["c", S, Es]) :-
    compound_name_arguments(T, F, As),
    atom_string(F, S),
    maplist(encode, As, Es).

%   ext(+Head, ?Id, ?Body, ?Kind, -Ext): the stored fact of a clause, `'u F'(Head, Id, Body,
%   Kind)` for a head of name F: the name prefixed (no name can clash with a predicate of the
%   temporary module), the head whole as the first argument, so that SWI-Prolog's deep
%   indexing works on the head's own arguments
ext(Head, Id, Body, Kind, 'u'(Head, Id, Body, Kind)) :- var(Head), !.
ext(Head, Id, Body, Kind, E) :-
    (   compound(Head) -> compound_name_arity(Head, F, _)
    ;   atom(Head) -> F = Head
    ;   throw(pg_error(not_callable(Head)))
    ),
    atom_concat('u ', F, F1),
    compound_name_arguments(E, F1, [Head, Id, Body, Kind]).

compound_name_arguments_(Head, F, As) :-
    (   compound(Head) -> compound_name_arguments(Head, F, As)
    ;   atom(Head) -> F = Head, As = []
    ;   throw(pg_error(not_callable(Head)))
    ).

defined(M, G) :-
    (   compound(G) -> compound_name_arity(G, F, A)
    ;   atom(G) -> F = G, A = 0
    ;   throw(pg_error(not_callable(G)))
    ),
    M:'$def'(F, A).

%   mark_probabilistic(+M): '$prob'(F, A) for each predicate that has a probabilistic clause
%   or calls one (also under negation, findall, call/N), and for each predicate whose body
%   calls a goal only known at run time (it may reach anything).
mark_probabilistic(M) :-
    findall(F/A-Q, (M:'$def'(F, A), functor(H, F, A), ext(H, _, B, K, E), M:E,
                    clause_calls(K, B, Q)), Edges0),
    sort(Edges0, Edges),
    findall(P, member(P-prob, Edges), Seeds0), sort(Seeds0, Seeds),
    propagate(Seeds, Edges, Seeds, Prob),
    forall(member(F/A, Prob), assertz(M:'$prob'(F, A))).

%   check_instantiation_tests(+M): a clause of a probabilistic predicate that tests whether
%   one of its head's variables is bound (==, var/1, a type test, the standard order) makes
%   the program ProbLog's grounder's. Its answer there depends on the call as made: this
%   grounder proves a call over the atoms that may be true, each bound before its clauses
%   run, so `fill(A) :- A == unknown.` would hold for a call fill(_) whose clause bound A.
check_instantiation_tests(M) :-
    (   M:'$prob'(F, A), functor(H, F, A), ext(H, _, B, _, E), M:E,
        term_variables(H, HVs), HVs \== [],
        sub_term(G0, B), compound(G0),
        ( G0 = '$b'(G) -> true ; G = G0 ),
        instantiation_test(G),
        term_variables(G, GVs), member(V, GVs), member(W, HVs), V == W
    ->  functor(G, GF, GA),
        format(string(Msg), "~w/~w testing whether a head argument is bound (~w/~w), \c
                             which ProbLog answers per call", [F, A, GF, GA]),
        throw(pg_unsupported(Msg))
    ;   true
    ).

instantiation_test(G) :- functor(G, F, A), instantiation_test(F, A).

instantiation_test(==, 2).  instantiation_test(\==, 2). instantiation_test(var, 1).
instantiation_test(nonvar, 1). instantiation_test(ground, 1).
instantiation_test(@<, 2).  instantiation_test(@=<, 2). instantiation_test(@>, 2).
instantiation_test(@>=, 2). instantiation_test(compare, 3).
instantiation_test(atom, 1). instantiation_test(atomic, 1). instantiation_test(number, 1).
instantiation_test(integer, 1). instantiation_test(float, 1). instantiation_test(compound, 1).
instantiation_test(callable, 1). instantiation_test(is_list, 1).

clause_calls(K, _, prob) :- K \== det.
clause_calls(_, B, Q) :- body_calls(B, Q).

body_calls(G, prob) :- var(G), !.
body_calls(G, Q) :- control(G, Subs), !, member(S, Subs), body_calls(S, Q).
body_calls(G, Q) :- compound(G), compound_name_arguments(G, call, [G0|Extra]), !,
    (   var(G0) -> Q = prob ; add_args(G0, Extra, G1), body_calls(G1, Q) ).
body_calls(G, F/A) :- callable(G), functor(G, F, A).

control((A, B), [A, B]).
control((A ; B), [A, B]).
control((A -> B), [A, B]).
control(\+ A, [A]).
control(not(A), [A]).
control(once(A), [A]).
control(findall(_, G, _), [G]).
control(forall(A, B), [A, B]).

propagate(Frontier, Edges, Known, Prob) :-
    findall(P, (member(Q, Frontier), member(P-Q, Edges), \+ memberchk(P, Known)), New0),
    sort(New0, New),
    (   New == []
    ->  Prob = Known
    ;   append(Known, New, Known1), propagate(New, Edges, Known1, Prob)
    ).

probabilistic(M, G) :-
    (   compound(G) -> compound_name_arity(G, F, A)
    ;   atom(G) -> F = G, A = 0
    ),
    M:'$prob'(F, A).

%   compile_bodies(+M): each body goal known at load time tagged with how it runs:
%   '$b'(G) an allowed builtin, '$d'(G) a deterministic predicate of the program, '$p'(G) a
%   probabilistic one (so that proving does not look it up again per call); goals built at
%   run time keep the general path. A tag is only a shortcut: '$b' checks the builtin table
%   again before calling, and '$d'/'$p' resolve against the program's clauses (data).
compile_bodies(M) :-
    forall(M:'$def'(F, A), compile_predicate(M, F, A)).

compile_predicate(M, F, A) :-
    functor(H, F, A),
    ext(H, Id, B, K, E),
    findall(c(H, Id, B, K), M:E, Cs),
    retractall(M:E),
    forall(member(c(H1, Id1, B1, K1), Cs),
           ( tag_goal(M, B1, B2), ext(H1, Id1, B2, K1, E1), assertz(M:E1) )).

tag_goal(_, G, G) :- var(G), !.
tag_goal(M, (A, B), (A1, B1)) :- !, tag_goal(M, A, A1), tag_goal(M, B, B1).
tag_goal(M, (A ; B), (A1 ; B1)) :- !, tag_goal(M, A, A1), tag_goal(M, B, B1).
tag_goal(M, (A -> B), (A1 -> B1)) :- !, tag_goal(M, A, A1), tag_goal(M, B, B1).
tag_goal(M, \+ A, \+ A1) :- !, tag_goal(M, A, A1).
tag_goal(M, not(A), not(A1)) :- !, tag_goal(M, A, A1).
tag_goal(M, once(A), once(A1)) :- !, tag_goal(M, A, A1).
tag_goal(M, findall(T, A, L), findall(T, A1, L)) :- !, tag_goal(M, A, A1).
tag_goal(M, forall(A, B), forall(A1, B1)) :- !, tag_goal(M, A, A1), tag_goal(M, B, B1).
tag_goal(_, G, '$b'(G)) :- builtin(G), !.
tag_goal(M, G, W) :- callable(G), defined(M, G), !,
    (   probabilistic(M, G) -> W = '$p'(G) ; W = '$d'(G) ).
tag_goal(_, G, G).

%   det_goal(+M, +G): G reaches no probabilistic clause (known now, before running it)
det_goal(_, G) :- var(G), !, fail.
det_goal(_, '$b'(_)) :- !.
det_goal(_, '$d'(_)) :- !.
det_goal(_, '$p'(_)) :- !, fail.
det_goal(M, G) :- control(G, Subs), !, forall(member(S, Subs), det_goal(M, S)).
det_goal(M, G) :- compound(G), compound_name_arguments(G, call, [G0|Extra]), !,
    nonvar(G0), add_args(G0, Extra, G1), det_goal(M, G1).
det_goal(M, G) :- \+ probabilistic(M, G).

add_args(G0, [], G0) :- !.
add_args(G0, Extra, G) :-
    compound_name_arguments_(G0, F, As0),
    append(As0, Extra, As),
    compound_name_arguments(G, F, As).

% -- deterministic goals ------------------------------------------------------------

%   solve(+M, +Goal, +Depth): a deterministic Goal (one that reaches no probabilistic clause)
%   by resolution in clause order, so findall/3 and if-then-else see answers in Prolog's
%   order; Depth bounds the recursion
solve(_, G, _) :- var(G), !, throw(error(instantiation_error, _)).
solve(_, '$b'(G), _) :- !, tagged_builtin(G).
solve(M, '$d'(G), D) :- !, solve_defined(M, G, D).
solve(_, '$p'(G), _) :- !, probabilistic_here(G).
solve(M, G, D) :- runtime_goal(G, G1), !, solve(M, G1, D).
solve(_, true, _) :- !.
solve(M, (A, B), D) :- !, solve(M, A, D), solve(M, B, D).
solve(M, (C -> T ; E), D) :- !,
    (   solve_condition(M, C, D) -> solve(M, T, D) ; solve(M, E, D) ).
solve(M, (A ; B), D) :- !, ( solve(M, A, D) ; solve(M, B, D) ).
solve(M, (C -> T), D) :- !, solve_condition(M, C, D), !, solve(M, T, D).
solve(M, \+ G, D) :- !, solve_not(M, G, D).
solve(M, not(G), D) :- !, solve_not(M, G, D).
solve(M, G, D) :- meta(M, G, D, G1), !, solve(M, G1, D).
%   once/1 is a plain call in ProbLog 2.3 (every answer of G), and so here
solve(M, once(G), D) :- !, deterministic(M, G, once/1), solve(M, G, D).
solve(M, findall(T, G, L), D) :- !,
    deterministic(M, G, findall/3), findall(T, solve(M, G, D), L).
solve(M, forall(C, A), D) :- !,
    deterministic(M, (C, A), forall/2), \+ ( solve(M, C, D), \+ solve(M, A, D) ).
solve(_, G, _) :- builtin(G), !, call_builtin(G).
solve(M, G, D) :- defined(M, G), !,
    (   probabilistic(M, G) -> probabilistic_here(G) ; solve_defined(M, G, D) ).
solve(_, G, _) :- functor(G, F, A), throw(pg_refused(F/A)).

tagged_builtin(G) :-
    (   builtin(G) -> call_builtin(G) ; throw(pg_refused('$b'/1)) ).

probabilistic_here(G) :-
    format(string(Msg), "~q, a probabilistic goal where a deterministic one is needed", [G]),
    throw(pg_unsupported(Msg)).

%   solve_defined(+M, ?G, +D): the answers of G, a call of a deterministic predicate, in
%   clause order; memoised per call variant (as ProbLog tables every call: Poker's hands are
%   looked up again under every negation), a call reaching its own variant is a loop
solve_defined(M, G, D) :-
    M:'$det_calls'(T),
    (   trie_lookup(T, G, V)
    ->  (   V = done(Answers) -> member(G, Answers) ; throw(pg_deep) )
    ;   D1 is D + 1,
        (   D1 /\ 4095 =:= 0 -> check_depth(M, D1) ; true ),
        trie_insert(T, G, pending),
        copy_term(G, G1),
        findall(G1, ( ext(G1, Id, B, _, E), M:E, every_so_often(M),
                      at_clause(Id, solve(M, B, D1)) ),
                Answers),
        trie_update(T, G, done(Answers)),
        member(G, Answers)
    ).

%   every_so_often(+M): each 4,096th call checks the memory budget: the process's resident
%   size (tables and answer lists grow outside the stacks, as for nat(X) over
%   nat(s(N)) :- nat(N))
every_so_often(M) :-
    flag(M, C, C + 1),
    (   C /\ 4095 =:= 0 -> check_memory(M) ; true ).

check_memory(M) :-
    M:'$rss_limit'(Limit),
    (   integer(Limit), resident_bytes(R), R > Limit
    ->  throw(error(resource_error(memory), _))
    ;   true
    ).

%   resident_bytes(-Bytes): resident memory of this process (Linux /proc; fails elsewhere)
resident_bytes(Bytes) :-
    catch(setup_call_cleanup(open('/proc/self/statm', read, In),
                             read_line_to_string(In, Line), close(In)), _, fail),
    split_string(Line, " ", "", [_, Pages|_]),
    number_string(P, Pages),
    Bytes is P * 4096.

%   check_depth(+M, +Depth): the recursion budget (`max_depth`), then 100,000 nested calls
%   (an unbounded recursion through ever new calls)
check_depth(M, D) :-
    M:'$max_depth'(Max),
    (   integer(Max), D > Max -> throw(pg_budget(stack(Max))) ; true ),
    (   D > 100000 -> throw(pg_deep) ; true ).

solve_not(M, G, D) :-
    deterministic(M, G, (\+)/1),
    \+ solve(M, G, D).

solve_condition(M, C, D) :-
    deterministic(M, C, (->)/2),
    solve(M, C, D).

deterministic(M, G, _) :- det_goal(M, G), !.
deterministic(_, _, What) :-
    format(string(Msg), "~q over a probabilistic goal", [What]),
    throw(pg_unsupported(Msg)).

%   meta(+M, +G, +D, -G1): call/N as the goal it calls
meta(_, G, _, G1) :-
    compound(G), compound_name_arguments(G, call, [G0|Extra]),
    (   var(G0) -> throw(error(instantiation_error, _)) ; true ),
    unquoted_goal(G0, G00),
    add_args(G00, Extra, G1).

%   runtime_goal(+G, -G1): G, a goal built at run time from a term whose name ProbLog's reader
%   quoted (an operator term such as 1 < 2 in a list, '_consult'(...)), as the goal of the
%   unquoted name that ProbLog calls
runtime_goal(G, G1) :-
    callable(G),
    functor(G, F, _),
    atom(F),
    quoted_name(F),
    unquoted_goal(G, G1).

%   unquoted_goal(+G0, -G): G0 as a goal: its name without the quotes ProbLog's reader
%   keeps (a goal built at run time from a quoted atom calls the predicate of that name)
unquoted_goal(G0, G) :-
    (   compound(G0) -> compound_name_arguments(G0, F0, As)
    ;   atom(G0) -> F0 = G0, As = []
    ;   throw(pg_error(not_callable(G0)))
    ),
    (   quoted_name(F0)
    ->  atom_codes(F0, Cs0),
        strip_quotes(Cs0, Cs),
        atom_codes(F, Cs),
        (   As == [] -> G = F ; compound_name_arguments(G, F, As) )
    ;   G = G0
    ).

quoted_name(F) :- sub_atom(F, 0, 1, _, ''''), !.
quoted_name(F) :- sub_atom(F, _, 1, 0, '''').

strip_quotes([0''|Cs0], Cs) :- !, strip_quotes(Cs0, Cs).
strip_quotes(Cs0, Cs) :-
    reverse(Cs0, R0),
    drop_quotes(R0, R),
    reverse(R, Cs).

drop_quotes([0''|R0], R) :- !, drop_quotes(R0, R).
drop_quotes(R, R).

% -- builtins --------------------------------------------------------------------------

%!  builtin(+Goal) is semidet.
%
%   Goal is one of the pure builtins a program may call (the table of nesybench's ProbLog
%   allow-list): nothing outside this table is ever called.
builtin(G) :- functor(G, F, A), builtin(F, A).

builtin(true, 0).   builtin(fail, 0).   builtin(false, 0).
builtin(=, 2).      builtin(\=, 2).     builtin(==, 2).     builtin(\==, 2).
builtin(@<, 2).     builtin(@=<, 2).    builtin(@>, 2).     builtin(@>=, 2).
builtin(compare, 3).
builtin(is, 2).     builtin(<, 2).      builtin(=<, 2).     builtin(>, 2).
builtin(>=, 2).     builtin(=:=, 2).    builtin(=\=, 2).    builtin(between, 3).
builtin(succ, 2).   builtin(plus, 3).
builtin(var, 1).    builtin(nonvar, 1). builtin(atom, 1).   builtin(atomic, 1).
builtin(compound, 1). builtin(callable, 1). builtin(float, 1). builtin(integer, 1).
builtin(number, 1). builtin(is_list, 1). builtin(ground, 1).
builtin(functor, 3). builtin(arg, 3).   builtin(=.., 2).    builtin(atom_number, 2).
builtin(length, 2). builtin(sort, 2).   builtin(subsumes_term, 2).
builtin(memberchk_ground, 2). builtin(ground_list, 2).

call_builtin(G) :-
    builtin_modes(G, Modes),
    \+ ( member(Mode, Modes), mode_matches(Mode, G) ),
    !,
    functor(G, F, A),
    format(string(Msg), "~w/~w called outside its argument modes ~w (ProbLog's \c
                         CallModeError)", [F, A, Modes]),
    throw(pg_error(Msg)).
call_builtin(memberchk_ground(X, L)) :- !, is_list(L), ground(L), memberchk(X, L).
call_builtin(ground_list(L, B)) :- !,
    (   is_list(L), ground(L) -> B = true ; B = false ).
call_builtin(X is E) :- !, pg_eval(E, V0), stored_value(V0, V), X = V.
call_builtin(A < B) :- !, compare_values(<, A, B).
call_builtin(A =< B) :- !, compare_values(=<, A, B).
call_builtin(A > B) :- !, compare_values(>, A, B).
call_builtin(A >= B) :- !, compare_values(>=, A, B).
call_builtin(A =:= B) :- !, compare_values(=:=, A, B).
call_builtin(A =\= B) :- !, compare_values(=\=, A, B).
call_builtin(atom(X)) :- !, ( X == [] -> true ; atom(X) ).    % [] is an atom in ProbLog
call_builtin(callable(X)) :- !, ( X == [] -> true ; callable(X) ).
call_builtin(atomic(X)) :- !, \+ string(X), atomic(X).           % a string is not atomic there
call_builtin(is_list(X)) :- !, pg_is_list(X).
call_builtin(functor(T, F, A)) :- !, pg_functor(T, F, A).
call_builtin(T =.. L) :- !, pg_univ(T, L).
call_builtin(arg(I, T, X)) :- !, pg_arg(I, T, X).
call_builtin(succ(A, B)) :- !, pg_succ(A, B).
call_builtin(plus(A, B, C)) :- !, pg_plus(A, B, C).
call_builtin(atom_number(A, N)) :- !, pg_atom_number(A, N).
call_builtin(between(L, H, V)) :- !, pg_between(L, H, V).
call_builtin(length(L, N)) :- !, pg_length(L, N).
call_builtin(A = B) :- !,              % ProbLog refuses a cyclic term, as ISO's check does
    (   unify_with_occurs_check(A, B) -> true
    ;   \+ A = B -> fail
    ;   format(string(Msg), "infinite unification of ~q and ~q", [A, B]),
        throw(pg_error(Msg))
    ).
call_builtin(A == B) :- !, non_finite_vs_atom(A, B), A == B.
call_builtin(A \== B) :- !, non_finite_vs_atom(A, B), A \== B.
call_builtin(A \= B) :- !,             % the same occurs check, then negated
    \+ call_builtin(A = B).
call_builtin(compare(O, A, B)) :- !, pg_order(A, B, O0), order_atom(O0, O1), O = O1.
call_builtin(A @< B) :- !, pg_order(A, B, <).
call_builtin(A @=< B) :- !, pg_order(A, B, O), O \== (>).
call_builtin(A @> B) :- !, pg_order(A, B, >).
call_builtin(A @>= B) :- !, pg_order(A, B, O), O \== (<).
call_builtin(sort(L, S)) :- !, pg_sort(L, S0), S = S0.
call_builtin(subsumes_term(G, S)) :- !,
    (   term_variables(G, GVs), term_variables(S, SVs),
        member(V, GVs), member(W, SVs), V == W
    ->  throw(pg_unsupported("subsumes_term/2 over terms that share variables, which \c
                              ProbLog's subsumes_term/2 answers otherwise than ISO's"))
    ;   subsumes_term(G, S)
    ).
call_builtin(G) :- call(G).

%   builtin_modes(+Goal, -Modes): ProbLog's accepted argument modes of a builtin (the
%   check_mode/2 calls of ProbLog's engine_builtin.py, one character per argument): a call
%   that matches none of them is an error there (CallModeError), not a failure
builtin_modes(atom_number(_, _), ["vf", "vi", "av", "af", "ai"]).
builtin_modes(_ =.. _, ["vL", "nv", "nl"]).
builtin_modes(arg(_, _, _), ["In*"]).
builtin_modes(functor(_, _, _), ["vaI", "n**"]).
builtin_modes(_ < _, ["gg"]).   builtin_modes(_ > _, ["gg"]).
builtin_modes(_ =< _, ["gg"]).  builtin_modes(_ >= _, ["gg"]).
builtin_modes(_ =:= _, ["gg"]). builtin_modes(_ =\= _, ["gg"]).
builtin_modes(_ is _, ["*g"]).
builtin_modes(compare(_, _, _), ["<**", "v**"]).
builtin_modes(length(_, _), ["LI", "Lv", "lI", "vI"]).
builtin_modes(sort(_, _), ["L*"]).
builtin_modes(between(_, _, _), ["iii", "iiv"]).
builtin_modes(succ(_, _), ["vI", "Iv", "II"]).
builtin_modes(plus(_, _, _), ["iii", "iiv", "ivi", "vii"]).

mode_matches(Mode, G) :-
    string_chars(Mode, Types),
    G =.. [_|Args],
    maplist(mode_type, Types, Args).

%   mode_type(+Char, +Arg): ProbLog's mode_types over this grounder's terms (ProbLog's []
%   is an atom; its strings are constants, not atoms; its compare atoms keep their quotes)
mode_type(v, X) :- var(X).
mode_type(n, X) :- nonvar(X).
mode_type(*, _).
mode_type(g, X) :- ground(X).
mode_type(a, X) :- ( X == [] -> true ; atom(X) ).
mode_type(c, X) :- ( X == [] -> true ; atom(X) -> true ; compound(X) ).
mode_type(i, X) :- integer(X).
mode_type('I', X) :- integer(X).
mode_type(f, X) :- float(X).
mode_type(l, X) :- ( X == [] -> true ; nonvar(X), X = [_|_], '$skip_list'(_, X, T),
                     ( T == [] -> true ; var(T) ) ).
mode_type('L', X) :- is_list(X).
mode_type(<, X) :- nonvar(X), order_atom(_, X).
mode_type(s, X) :- ( string(X) -> true ; mode_type(a, X) ).

%   order_atom(?Order, ?ProbLogAtom)
%   ProbLog's compare/3 answers with the quoted atoms '<', '=' and '>', whose names keep
%   their quotes there (a program writes compare('<', A, B)).
order_atom(<, '\'<\'').
order_atom(=, '\'=\'').
order_atom(>, '\'>\'').

% -- term inspection (ProbLog's) ---------------------------------------------------------

%   ProbLog names a list cell '.' (SWI-Prolog: '[|]') and calls a partial list a list.
pg_is_list(X) :- X == [], !.
pg_is_list(X) :- nonvar(X), X = [_|T], list_tail_open(T).

list_tail_open(T) :- var(T), !.
list_tail_open([]) :- !.
list_tail_open([_|T]) :- list_tail_open(T).

%   functor/3 in ProbLog's modes: a term's name (a number's name is the atom of its text, as
%   ProbLog's Term of the number prints), or a term of an atom's name and an integer arity
pg_functor(T, F, A) :- number(T), !,        % a number's name, which ProbLog's
    (   number(F) -> F == T ; number_name(T, F0), F = F0 ),   % unification equates with it
    A = 0.
pg_functor(T, F, A) :- nonvar(T), !, functor(T, F0, A0), list_name(F0, F1), F = F1, A = A0.
pg_functor(T, F, A) :- var(T), F == '.', A == 2, !, T = [_|_].
pg_functor(T, F, A) :- var(T), ( atom(F) ; F == [] ), integer(A), !,
    (   A =< 0 -> T = F ; functor(T, F, A) ).
pg_functor(T, F, A) :- mode_error(functor(T, F, A)).

number_name(N, F) :-
    (   integer(N) -> atom_number(F, N)
    ;   py_call(str(N), S), atom_string(F, S)      % Python's text of a float, as ProbLog's
    ).

pg_arg(I, T, X) :- integer(I), nonvar(T), !,
    (   compound(T), I >= 1 -> arg(I, T, X) ; fail ).
pg_arg(I, T, X) :- mode_error(arg(I, T, X)).

pg_univ(T, _) :- nonvar(T), control_term(T), !,
    throw(pg_unsupported("=.. on a conjunction, disjunction, negation or if-then, which \c
                          ProbLog's engine cannot take apart (an error there)")).
pg_univ(T, L) :- nonvar(T), !, T =.. [F0|As], list_name(F0, F), L = [F|As].
pg_univ(T, L) :- L = [F, H, R], F == '.', !, T = [H|R].
pg_univ(T, L) :- T =.. L.

%   pg_atom_number(?Atom, ?Number): ProbLog's atom_number/2 (its modes are checked before):
%   a number's atom is Python's text of it; an atom's number is Python's float() of its name,
%   an integer where it is whole (an error for inf and nan, as there); both bound: fails
pg_atom_number(A, N) :- var(A), !,
    (   integer(N) -> format(atom(A), "~d", [N])
    ;   py_call(str(N), S), atom_string(A, S)
    ).
pg_atom_number(A, N) :- var(N), !,
    atom_string(A, S),
    py_call('nesybench.nesy.program.arith':atom_number(S), R),
    (   R = [1, V] -> N = V
    ;   R = [2, Msg] -> throw(pg_error(Msg))
    ).
pg_atom_number(_, _) :- fail.

%   non_finite_vs_atom(+A, +B): ProbLog compares the float inf or nan with the atom of the
%   same name in its own way (X is inf, X == inf holds there): such a comparison is ProbLog's
%   grounder's
non_finite_vs_atom(A, B) :-
    (   ( float(A), atom(B) ; float(B), atom(A) ),
        ( float(A) -> F = A ; F = B ),
        \+ ( F =:= F, abs(F) =\= inf )
    ->  throw(pg_unsupported("== between a non-finite float and an atom, which ProbLog \c
                              compares by its own rule"))
    ;   true
    ).

control_term((_, _)).  control_term((_ ; _)).  control_term(\+ _).  control_term((_ -> _)).
control_term(T) :- compound(T), compound_name_arity(T, '\'->\'', 2).

list_name('[|]', '.') :- !.
list_name(F, F).

% -- counting builtins (ProbLog's modes) -------------------------------------------------

%   ProbLog accepts exactly these modes (an integer of any sign where SWI-Prolog wants a
%   natural number, no `inf`), and any other call is an error of the program.
pg_succ(A, B) :- var(A), integer(B), !, A is B - 1.
pg_succ(A, B) :- integer(A), var(B), !, B is A + 1.
pg_succ(A, B) :- integer(A), integer(B), !, B =:= A + 1.
pg_succ(A, B) :- mode_error(succ(A, B)).

pg_plus(A, B, C) :- integer(A), integer(B), integer(C), !, A + B =:= C.
pg_plus(A, B, C) :- integer(A), integer(B), var(C), !, C is A + B.
pg_plus(A, B, C) :- integer(A), var(B), integer(C), !, B is C - A.
pg_plus(A, B, C) :- var(A), integer(B), integer(C), !, A is C - B.
pg_plus(A, B, C) :- mode_error(plus(A, B, C)).

pg_between(L, H, V) :- integer(L), integer(H), integer(V), !, L =< V, V =< H.
pg_between(L, H, V) :- integer(L), integer(H), var(V), !, between(L, H, V).
pg_between(L, H, V) :- mode_error(between(L, H, V)).

pg_length(L, N) :- is_list(L), ( integer(N) ; var(N) ), !,
    length(L, K), N = K.                % a negative length fails, as in ProbLog
pg_length(L, N) :- integer(N), open_list(L, K), !, N >= K, length(L, N).
pg_length(L, N) :- mode_error(length(L, N)).

%   open_list(@L, -K): L is a variable or a partial list of K elements
open_list(L, 0) :- var(L), !.
open_list([_|T], K) :- open_list(T, K0), K is K0 + 1.

mode_error(G) :-
    format(string(Msg), "invalid argument types for call to ~q", [G]),
    throw(pg_error(Msg)).

% -- standard order (ProbLog's) ---------------------------------------------------------

%!  pg_order(@A, @B, -Order) is det.
%
%   Order (`<`, `=` or `>`) of A and B in ProbLog's standard order, by ProbLog's own
%   comparison (`nesybench.nesy.program.standard_order`): numbers of different value are ordered by
%   their text there, strings come before atoms, and so on; SWI-Prolog's order differs.
pg_order(A, B, _) :-
    A \== B, term_variables(A, [_|_]), term_variables(B, [_|_]), !,
    throw(pg_unsupported("the standard order of two terms with unbound variables, which \c
                          ProbLog's engine decides by its own numbering of variables")).
pg_order(A, B, O) :-
    term_variables(A-B, Vs),
    encode_numbered(A, Vs, EA),
    encode_numbered(B, Vs, EB),
    py_call('nesybench.nesy.program.standard_order':order(EA, EB), R),
    order_symbol(R, O).

order_symbol(-1, <).
order_symbol(0, =).
order_symbol(1, >).

%!  pg_sort(+List, -Sorted) is det.
%
%   sort/2 as ProbLog computes it (duplicates removed, ProbLog's order), by one call to
%   ProbLog's own code for the whole list.
pg_sort(L, S) :-
    (   is_list(L) -> true ; throw(error(type_error(list, L), sort/2)) ),
    term_variables(L, Vs),
    maplist(encode_with(Vs), L, Es),
    py_call('nesybench.nesy.program.standard_order':sort_indices(Es), Is),
    Items =.. [items|L],
    maplist(item_at(Items), Is, S).

encode_with(Vs, T, E) :- encode_numbered(T, Vs, E).

item_at(Items, I, X) :- I1 is I + 1, arg(I1, Items, X).

%   encode_numbered(@T, +Vars, -E): encode/2, a variable as `["v", K]`, K its position in
%   Vars (from 0)
encode_numbered(T, Vs, ["v", K]) :- var(T), !, var_position(Vs, T, 0, K).
encode_numbered(T, _, T) :- number(T), !.
encode_numbered([], _, ["n"]) :- !.
encode_numbered(T, _, ["a", S]) :- atom(T), !, atom_string(T, S).
encode_numbered(T, _, ["s", T]) :- string(T), !.
encode_numbered([H|T], Vs, ["l", EH, ET]) :- !,
    encode_numbered(H, Vs, EH), encode_numbered(T, Vs, ET).
encode_numbered(T, Vs, ["c", S, Es]) :-
    compound_name_arguments(T, F, As),
    atom_string(F, S),
    maplist(encode_with(Vs), As, Es).

var_position([V|Vs], X, K0, K) :-
    (   V == X -> K = K0 ; K1 is K0 + 1, var_position(Vs, X, K1, K) ).

% -- arithmetic (ProbLog's) -------------------------------------------------------------

%!  pg_eval(+Expression, -Value:number) is det.
%
%   Value of Expression as ProbLog computes it: each function by ProbLog's own table
%   (`nesybench.nesy.program.arith:apply/2`, bounded before it computes), integer `+` and `-` here
%   (the same results). An error of the program throws pg_error(arith(Message)).
pg_eval(X, _) :- var(X), !,
    throw(pg_error(arith("arguments are not sufficiently instantiated"))).
pg_eval(X, V) :- number(X), !, V = X.
pg_eval(X, _) :- string(X), !,        % ProbLog computes with the string as Python would
    throw(pg_unsupported("arithmetic on a string, which ProbLog evaluates as a Python str")).
pg_eval(X, V) :-
    arith_parts(X, F, As),
    maplist(pg_eval, As, Vs),
    arith(F, Vs, V).

arith_parts(X, F, As) :-
    (   X == [] -> F = '[]', As = []
    ;   atom(X) -> F0 = X, As = [], unquote(F0, F)
    ;   compound(X)
    ->  compound_name_arguments(X, F0, As),
        (   F0 == '[|]' -> F = '.' ; unquote(F0, F) )
    ;   format(string(Msg), "~q is not a number", [X]),
        throw(pg_error(arith(Msg)))
    ).

unquote(F0, F) :-
    (   quoted_name(F0)
    ->  atom_codes(F0, Cs0), strip_quotes(Cs0, Cs), atom_codes(F, Cs)
    ;   F = F0
    ).

%   on integers (within the bound of nesybench.nesy.program.arith) SWI-Prolog computes what Python
%   does: `//` is div (floor), ProbLog's `mod` and `rem` are both Python's %, which is mod
arith(+, [A, B], V) :- integer(A), integer(B), !, V is A + B.
arith(-, [A, B], V) :- integer(A), integer(B), !, V is A - B.
arith(*, [A, B], V) :-             % 100,000: nesybench.nesy.program.arith.MAX_INT_BITS
    integer(A), integer(B), int_bits(A, BA), int_bits(B, BB), BA + BB =< 100000, !,
    V is A * B.
arith(//, [A, B], V) :- integer(A), integer(B), B =\= 0, !, V is A div B.
arith(mod, [A, B], V) :- integer(A), integer(B), B =\= 0, !, V is A mod B.
arith(rem, [A, B], V) :- integer(A), integer(B), B =\= 0, !, V is A mod B.
arith(min, [A, B], V) :- integer(A), integer(B), !, V is min(A, B).
arith(max, [A, B], V) :- integer(A), integer(B), !, V is max(A, B).
arith(-, [A], V) :- integer(A), !, V is -A.
arith(abs, [A], V) :- integer(A), !, V is abs(A).
arith(F, [A, B], V) :-                 % IEEE operations: the same double in Python
    float_operands(F, A, B),
    catch(float_op(F, A, B, V0), _, fail),
    finite(V0), !,
    V = V0.
arith(F, Vs, V) :-
    py_call('nesybench.nesy.program.arith':apply(F, Vs), R),
    (   R = [1, V0]
    ->  V = V0
    ;   R = [_, Msg],
        throw(pg_error(arith(Msg)))
    ).

int_bits(X, B) :- ( X =:= 0 -> B = 0 ; B is msb(abs(X)) + 1 ).

%   float_operands(+F, +A, +B): A F B is one IEEE operation in Python and here: + - * with a
%   float operand, / of any two, every operand finite and every integer exact as a double (a
%   non-finite result, a division by zero: Python's table, for its error)
float_operands(F, A, B) :-
    memberchk(F, [+, -, *, /]),
    exact_double(A), exact_double(B),
    (   F == (/) -> true ; float(A) -> true ; float(B) ).

exact_double(X) :- float(X), !, finite(X).
exact_double(X) :- integer(X), abs(X) =< 9007199254740992.

float_op(+, A, B, V) :- V is float(A) + float(B).
float_op(-, A, B, V) :- V is float(A) - float(B).
float_op(*, A, B, V) :- V is float(A) * float(B).
float_op(/, A, B, V) :- V is float(A) / float(B).

finite(V) :- float_class(V, C), memberchk(C, [zero, subnormal, normal]).

%   stored_value(+V0, -V): the constant is/2 binds (a float rounded to 15 decimals)
stored_value(V0, V) :-
    (   float(V0), finite(V0)
    ->  format(atom(S), "~15f", [V0]), atom_number(S, V1), V = V1
    ;   float(V0) -> py_call('nesybench.nesy.program.arith':result(V0), V)
    ;   V = V0
    ).

compare_values(Op, A, B) :-
    pg_eval(A, X),
    pg_eval(B, Y),
    (   integer(X), integer(Y)
    ->  compare_integers(Op, X, Y)
    ;   py_call('nesybench.nesy.program.arith':compare(Op, X, Y), 1)
    ).

compare_integers(<, X, Y) :- X < Y.
compare_integers(=<, X, Y) :- X =< Y.
compare_integers(>, X, Y) :- X > Y.
compare_integers(>=, X, Y) :- X >= Y.
compare_integers(=:=, X, Y) :- X =:= Y.
compare_integers(=\=, X, Y) :- X =\= Y.

%   at_clause(+Id, :Goal): Goal, the proof of a body of clause Id; an error of the program
%   in it (a builtin's error, a refused call) carries the clause, so that Python can name its
%   line (the innermost clause wins)
at_clause(Id, Goal) :-
    catch(Goal, E, relocate(Id, E)).

relocate(Id, E) :- program_error(E), !, throw(pg_at(Id, E)).
relocate(_, E) :- throw(E).

program_error(error(E, _)) :- E \= resource_error(_).
program_error(pg_error(_)).
program_error(pg_refused(_)).

% -- phase 2: the ground program ---------------------------------------------------------

%   state: st(CallTrie, NodeTrie, ChoiceTrie, NodeCount, ChoiceCount, MaxNodes, Module,
%             CallCount, Mode); in mode `cyclic` the CallTrie maps ground atoms to their node

query_label(S, q(J, G, Vs), Labels) :-
    findall(Vs-N, proof(S, G, N), Pairs0),
    (   member(Vs1-_, Pairs0), \+ ground(Vs1)
    ->  format(string(Msg), "query ~q has an answer that is not ground", [G]),
        throw(pg_unsupported(Msg))
    ;   true
    ),
    keysort(Pairs0, Pairs),
    group_pairs_by_key(Pairs, Groups),
    findall([J, Values, N],
            ( member(Vs2-Ns, Groups), disj(S, Ns, N),
              maplist(py_value, Vs2, Values) ),
            Labels).

%   Evidence on an atom with variables observes every answer true, as in ProbLog: the
%   conjunction of the answers' nodes (observed false, or with no answer: ProbLog's grounder)
evidence_node(S, e(K, A, V), [K, Text, N, V]) :-
    (   ground(A)
    ->  findall(N0, proof(S, A, N0), Ns),
        disj(S, Ns, N)
    ;   V == 1,
        findall(A-N0, proof(S, A, N0), Pairs),
        msort(Pairs, Sorted),
        group_pairs_by_key(Sorted, Groups),
        Groups \== []
    ->  findall(G, ( member(_-Ns, Groups), disj(S, Ns, G) ), Gs),
        (   conj(S, Gs, N) -> true ; N = false )
    ;   throw(pg_unsupported("evidence on an atom with variables observed false or without an answer"))
    ),
    encode(A, Text).

%   proof(+S, ?Goal, -Node): one proof of Goal, as a node
proof(S, G, N) :-
    arg(7, S, M), arg(9, S, Mode),
    (   Mode == fast
    ->  prove(S, M, G, [], Ls), conj(S, Ls, N)
    ;   prove_c(S, M, G, [], [], Ls, [], _), conj(S, Ls, N)
    ).

%   prove(+S, +M, +Goal, +Lits0, -Lits): one proof of Goal; Lits adds its literal nodes
prove(_, _, G, _, _) :- var(G), !, throw(error(instantiation_error, _)).
prove(_, _, '$b'(G), L, L) :- !, tagged_builtin(G).
prove(_, M, '$d'(G), L, L) :- !, solve_defined(M, G, 0).
prove(S, M, '$p'(G), L0, L) :- !, prove_probabilistic(S, M, G, L0, L).
prove(S, M, G, L0, L) :- runtime_goal(G, G1), !, prove(S, M, G1, L0, L).
prove(_, _, true, L, L) :- !.
prove(S, M, (A, B), L0, L) :- !, prove(S, M, A, L0, L1), prove(S, M, B, L1, L).
prove(S, M, (C -> T ; E), L0, L) :- !,
    (   solve_condition(M, C, 0) -> prove(S, M, T, L0, L) ; prove(S, M, E, L0, L) ).
prove(S, M, (A ; B), L0, L) :- !, ( prove(S, M, A, L0, L) ; prove(S, M, B, L0, L) ).
prove(S, M, (C -> T), L0, L) :- !, solve_condition(M, C, 0), !, prove(S, M, T, L0, L).
prove(S, M, \+ G, L0, L) :- !, prove_not(S, M, G, L0, L).
prove(S, M, not(G), L0, L) :- !, prove_not(S, M, G, L0, L).
prove(S, M, G, L0, L) :- meta(M, G, 0, G1), !, prove(S, M, G1, L0, L).
prove(_, M, G, L, L) :- det_goal(M, G), !, solve(M, G, 0).
prove(_, M, G, _, _) :- control(G, _), !,
    functor(G, F, A), deterministic(M, G, F/A).
prove(S, M, G, L0, L) :-
    defined(M, G), !,
    prove_probabilistic(S, M, G, L0, L).
prove(_, _, G, _, _) :- functor(G, F, A), throw(pg_refused(F/A)).

prove_probabilistic(S, M, G, L0, L) :-
    call_answers(S, M, G, Id),
    M:'$ans'(Id, G, N),
    add_lit(N, L0, L).

prove_not(S, M, G, L0, L) :-
    (   det_goal(M, G)
    ->  \+ solve(M, G, 0), L = L0
    ;   findall(N, (prove(S, M, G, [], Ls), conj(S, Ls, N)), Ns),
        disj(S, Ns, D),
        (   D == false -> L = L0
        ;   D == 0 -> fail
        ;   Neg is -D, L = [Neg|L0]
        )
    ).

add_lit(false, _, _) :- !, fail.
add_lit(0, L, L) :- !.
add_lit(N, L, [N|L]).

%   call_answers(+S, +M, +G, -Id): the answers of call G (a probabilistic predicate) are
%   '$ans'(Id, Atom, Node): each ground atom G may be, with the OR of its clause instances.
%   Memoised per variant of G (so a clause body is proved once per call, not once per
%   answer); a call that reaches its own variant again is a cycle.
call_answers(S, M, G, Id) :-
    arg(1, S, CT),
    (   trie_lookup(CT, G, V)
    ->  (   V = done(Id)
        ->  true
        ;   throw(pg_cyclic)
        )
    ;   trie_insert(CT, G, pending),
        copy_term(G, G1),
        term_variables(G1, Vs),         % answers told apart by their bindings only: sorting
        findall(Vs-N, body_node(S, M, G1, N), Pairs0),   % small keys is what makes it cheap
        (   member(Vs1-_, Pairs0), \+ ground(Vs1)
        ->  format(string(Msg), "a probabilistic atom with variables (~q)", [G1]),
            throw(pg_unsupported(Msg))
        ;   true
        ),
        keysort(Pairs0, Pairs),
        group_pairs_by_key(Pairs, Groups),
        arg(8, S, Calls), Id is Calls + 1, nb_setarg(8, S, Id),
        forall(member(K-Ns, Groups),
               (   disj(S, Ns, N), N \== false
               ->  copy_term(G1-Vs, A-K), assertz(M:'$ans'(Id, A, N))
               ;   true
               )),
        trie_update(CT, G, done(Id))
    ).

body_node(S, M, A, N) :-
    ext(A, Id, B, K, E),
    M:E,
    at_clause(Id, ( prove(S, M, B, [], Ls), head_literal(K, S, Id, A, Ls, Ls1) )),
    conj(S, Ls1, N).

head_literal(det, _, _, _, Ls, Ls).
head_literal(fact(P), S, Id, A, Ls, [L|Ls]) :-
    choice_literal(S, fact(Id, A), P, A, 0, L).
head_literal(ad(I, P, Vars), S, Id, A, Ls, [L|Ls]) :-
    (   ground(Vars) -> true
    ;   format(string(Msg), "an annotated disjunction with a variable left after its body (~q)",
               [A]),
        throw(pg_unsupported(Msg))
    ),
    choice_literal(S, ad(Id, Vars), P, A, I, L).

choice_literal(S, Key, P, Head, I, L) :-
    arg(3, S, CT), arg(7, S, M),
    (   trie_lookup(CT, Key, C)
    ->  true
    ;   arg(5, S, C), C1 is C + 1, nb_setarg(5, S, C1),
        trie_insert(CT, Key, C),
        choice_info(Key, P, Info),
        assertz(M:'$choice'(C, Info))
    ),
    (   M:'$cval'(C, I, _)
    ->  true
    ;   probability(P, D), encode(Head, HT),
        assertz(M:'$cval'(C, I, [I, HT, D]))
    ),
    node(S, lit(C, I), L).

choice_info(fact(_, A), _, [fact, Text]) :- !, encode(A, Text).
choice_info(_, nesy__nn(Net, Inputs, _, Decl), [nn, [NetT, InputTs, Decl]]) :- !,
    encode(Net, NetT), maplist(encode, Inputs, InputTs).
choice_info(_, _, [ad, ""]).

%   probability(+P, -D): a number, t-Init (learnable; Init a number or none), or nn
probability(P, P) :- number(P), !.
probability(t(X), t-V) :- !,
    (   var(X) -> V = none ; probability(X, V) ).
probability(nesy__nn(_, _, _, _), nn) :- !.
probability(P, V) :-
    catch(pg_eval(P, V), pg_error(arith(Why)), true),
    (   var(Why)
    ->  true
    ;   format(string(Msg), "the probability is not a number (~w)", [Why]),
        throw(pg_error(Msg))
    ).

conj(_, Ls0, false) :- memberchk(false, Ls0), !.
conj(S, Ls0, N) :-
    sort(Ls0, Ls),
    \+ contradictory(Ls),               % a and not a: no proof (as ProbLog's formula)
    (   Ls == [] -> N = 0
    ;   Ls = [X] -> N = X
    ;   node(S, and(Ls), N)
    ).

contradictory([X|Xs]) :-              % sorted: negative literals come first
    X < 0,
    (   Y is -X, memberchk(Y, Xs) -> true ; contradictory(Xs) ).

disj(S, Ns0, N) :-
    exclude(==(false), Ns0, Ns1),
    (   memberchk(0, Ns1) -> N = 0
    ;   sort(Ns1, Ns),
        (   Ns == [] -> N = false
        ;   contradictory(Ns) -> N = 0    % a or not a (as ProbLog's formula)
        ;   Ns = [X] -> N = X
        ;   node(S, or(Ns), N)
        )
    ).

%   node(+S, +Key, -Id): the hash-consed node Key (lit(C, I), and(Kids) or or(Kids))
node(S, Key, Id) :-
    arg(2, S, NT),
    (   trie_lookup(NT, Key, Id)
    ->  true
    ;   arg(4, S, N0), Id is N0 + 1, nb_setarg(4, S, Id),
        arg(6, S, Max),
        (   integer(Max), Id > Max
        ->  format(string(Msg), "nodes(~d)", [Max]), throw(pg_budget(Msg))
        ;   true
        ),
        trie_insert(NT, Key, Id),
        arg(7, S, M),
        assertz(M:'$node'(Id, Key)),
        (   Id /\ 4095 =:= 0 -> check_memory(M) ; true )
    ).

% -- cyclic programs ---------------------------------------------------------------------

:- table d/2.

%   d(+M, ?G): G, an atom of a probabilistic predicate, may be true (tabled, so that cycles
%   and left recursion terminate; the table's order is never used)
d(M, G) :-
    ext(G, Id, B, _, E),
    M:E,
    every_so_often(M),
    at_clause(Id, solve_possible(M, B)).

%   solve_possible(+M, +Goal): Goal succeeds when every probabilistic fact may be true
solve_possible(_, G) :- var(G), !, throw(error(instantiation_error, _)).
solve_possible(_, '$b'(G)) :- !, tagged_builtin(G).
solve_possible(M, '$d'(G)) :- !, solve_defined(M, G, 0).
solve_possible(M, '$p'(G)) :- !, d(M, G).
solve_possible(M, G) :- runtime_goal(G, G1), !, solve_possible(M, G1).
solve_possible(_, true) :- !.
solve_possible(M, (A, B)) :- !, solve_possible(M, A), solve_possible(M, B).
solve_possible(M, (C -> T ; E)) :- !,
    (   solve_condition(M, C, 0) -> solve_possible(M, T) ; solve_possible(M, E) ).
solve_possible(M, (A ; B)) :- !, ( solve_possible(M, A) ; solve_possible(M, B) ).
solve_possible(M, (C -> T)) :- !, solve_condition(M, C, 0), !, solve_possible(M, T).
solve_possible(M, \+ G) :- !, ( det_goal(M, G) -> \+ solve(M, G, 0) ; true ).
solve_possible(M, not(G)) :- !, solve_possible(M, \+ G).
solve_possible(M, G) :- meta(M, G, 0, G1), !, solve_possible(M, G1).
solve_possible(M, G) :- det_goal(M, G), !, solve(M, G, 0).
solve_possible(M, G) :- control(G, _), !, functor(G, F, A), deterministic(M, G, F/A).
solve_possible(M, G) :- defined(M, G), !, d(M, G).
solve_possible(_, G) :- functor(G, F, A), throw(pg_refused(F/A)).

%   prove_c(+S, +M, +Goal, +Ancestors, +Lits0, -Lits, +Hits0, -Hits): as prove/5, with the
%   ground atoms being proved above (Ancestors); Hits collects the ancestors this proof met
prove_c(_, _, G, _, _, _, _, _) :- var(G), !, throw(error(instantiation_error, _)).
prove_c(_, _, '$b'(G), _, L, L, H, H) :- !, tagged_builtin(G).
prove_c(_, M, '$d'(G), _, L, L, H, H) :- !, solve_defined(M, G, 0).
prove_c(S, M, '$p'(G), Anc, L0, L, H0, H) :- !, prove_c_probabilistic(S, M, G, Anc, L0, L, H0, H).
prove_c(S, M, G, Anc, L0, L, H0, H) :- runtime_goal(G, G1), !,
    prove_c(S, M, G1, Anc, L0, L, H0, H).
prove_c(_, _, true, _, L, L, H, H) :- !.
prove_c(S, M, (A, B), Anc, L0, L, H0, H) :- !,
    prove_c(S, M, A, Anc, L0, L1, H0, H1), prove_c(S, M, B, Anc, L1, L, H1, H).
prove_c(S, M, (C -> T ; E), Anc, L0, L, H0, H) :- !,
    (   solve_condition(M, C, 0)
    ->  prove_c(S, M, T, Anc, L0, L, H0, H)
    ;   prove_c(S, M, E, Anc, L0, L, H0, H)
    ).
prove_c(S, M, (A ; B), Anc, L0, L, H0, H) :- !,
    (   prove_c(S, M, A, Anc, L0, L, H0, H) ; prove_c(S, M, B, Anc, L0, L, H0, H) ).
prove_c(S, M, (C -> T), Anc, L0, L, H0, H) :- !,
    solve_condition(M, C, 0), !, prove_c(S, M, T, Anc, L0, L, H0, H).
prove_c(S, M, \+ G, Anc, L0, L, H, H) :- !, prove_not_c(S, M, G, Anc, L0, L).
prove_c(S, M, not(G), Anc, L0, L, H, H) :- !, prove_not_c(S, M, G, Anc, L0, L).
prove_c(S, M, G, Anc, L0, L, H0, H) :- meta(M, G, 0, G1), !,
    prove_c(S, M, G1, Anc, L0, L, H0, H).
prove_c(_, M, G, _, L, L, H, H) :- det_goal(M, G), !, solve(M, G, 0).
prove_c(_, M, G, _, _, _, _, _) :- control(G, _), !,
    functor(G, F, A), deterministic(M, G, F/A).
prove_c(S, M, G, Anc, L0, L, H0, H) :-
    defined(M, G), !,
    prove_c_probabilistic(S, M, G, Anc, L0, L, H0, H).
prove_c(_, _, G, _, _, _, _, _) :- functor(G, F, A), throw(pg_refused(F/A)).

prove_c_probabilistic(S, M, G, Anc, L0, L, H0, H) :-
    findall(G, d(M, G), Answers0),
    sort(Answers0, Answers),            % the table's order is not the program's
    member(G, Answers),
    (   ground(G) -> true
    ;   format(string(Msg), "a probabilistic atom with variables (~q)", [G]),
        throw(pg_unsupported(Msg))
    ),
    atom_c(S, M, G, Anc, N, Hit),
    ord_union(H0, Hit, H),
    (   N == false
    ->  L = [false|L0]      % no proof, but the ancestors it met must reach atom_c/6
    ;   add_lit(N, L0, L)
    ).

prove_not_c(S, M, G, Anc, L0, L) :-
    (   det_goal(M, G)
    ->  \+ solve(M, G, 0), L = L0
    ;   findall(N-H, (prove_c(S, M, G, Anc, [], Ls, [], H), conj(S, Ls, N)), Pairs),
        (   member(_-[_|_], Pairs)
        ->  throw(pg_unsupported("negation on a cycle"))
        ;   true
        ),
        pairs_keys(Pairs, Ns),
        disj(S, Ns, D),
        (   D == false -> L = L0
        ;   D == 0 -> fail
        ;   Neg is -D, L = [Neg|L0]
        )
    ).

%   atom_c(+S, +M, +A, +Ancestors, -Node, -Hits): the node of ground atom A where the atoms
%   of Ancestors are being proved (a call to one of them is false: it would be a cycle);
%   a node that met no ancestor is the same in every context and is kept
atom_c(_, _, A, Anc, false, [A]) :- memberchk(A, Anc), !.
atom_c(S, _, A, _, N, []) :- arg(1, S, AT), trie_lookup(AT, A, N), !.
atom_c(S, M, A, Anc, N, Hits) :-
    findall(Nb-Hb, body_c(S, M, A, [A|Anc], Nb, Hb), Pairs),
    pairs_keys(Pairs, Ns), pairs_values(Pairs, Hss),
    foldl(ord_union, Hss, [], Hits0),
    ord_del_element(Hits0, A, Hits),
    disj(S, Ns, N),
    (   Hits == [] -> arg(1, S, AT), trie_insert(AT, A, N) ; true ).

body_c(S, M, A, Anc, N, Hits) :-
    ext(A, Id, B, K, E),
    M:E,
    at_clause(Id, instance_proof(prove_c(S, M, B, Anc, [], Ls, [], Hits))),
    (   memberchk(false, Ls)
    ->  N = false
    ;   head_literal(K, S, Id, A, Ls, Ls1),
        conj(S, Ls1, N)
    ).

%   instance_proof(:Goal): Goal, the body of a clause proved again for one ground answer of
%   its head. An error of a builtin there comes from the head's bindings alone (phase 1
%   proved the body for the call as the program makes it, as ProbLog does, and met no error),
%   so that instance derives nothing: ProbLog never calls the body so bound.
instance_proof(G) :-
    catch(G, E, ( builtin_error(E) -> fail ; throw(E) )).

builtin_error(pg_at(_, E)) :- builtin_error(E).
builtin_error(error(E, _)) :- E \= resource_error(_).
builtin_error(pg_error(E)) :- E \= bad_input(_).

% -- output ------------------------------------------------------------------------------

node_list(_, I, N, []) :- I > N, !.
node_list(M, I, N, [Out|Rest]) :-
    M:'$node'(I, Key),
    node_out(Key, Out),
    I1 is I + 1,
    node_list(M, I1, N, Rest).

node_out(lit(C, I), [0, C, I]).
node_out(and(Ks), [1|Ks]).
node_out(or(Ks), [2|Ks]).

choice_list(_, C, N, []) :- C >= N, !.
choice_list(M, C, N, [[Kind, Key, Values]|Rest]) :-
    M:'$choice'(C, [Kind, Key]),
    findall(I-V, M:'$cval'(C, I, V), Pairs0),
    keysort(Pairs0, Pairs), pairs_values(Pairs, Values),
    C1 is C + 1,
    choice_list(M, C1, N, Rest).

%   py_value(+T, -V): a label value for Python: a number as it is, another term encoded
py_value(T, T) :- number(T), !.
py_value(T, V) :- encode(T, V).
