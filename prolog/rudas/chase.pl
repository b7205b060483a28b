:- module(rudas_chase,
          [ chase/4,                 % +Rules, +Facts, -Derived, +Options
            chase/5,                 % +Rules, +Facts, -Derived, -Status, +Options
            chase_files/3,           % +RulesFile, +FactsFile, -Derived
            chase_files/4,           % +RulesFile, +FactsFile, +OutFile, +Options
            store_new/2,             % -Store, +Rules
            store_free/1,            % +Store
            store_add/3,             % +Store, +Facts, -New
            store_has/2,             % +Store, +Fact
            store_saturate/5,        % +Store, +Delta, +Options, -Derived, -Status
            store_count/2,           % +Store, -Count
            read_rules/2,            % +File, -Rules
            read_facts/2,            % +File, -Facts
            rule_term/2              % ?Rule, ?Clause
          ]).
/** <module> Semi-naive forward chaining (bottom-up datalog evaluation) for RuDaS

Rules are terms rule(Head, Body) with Body a list of atoms (an empty body is a fact);
facts are ground atoms such as p3(c1,c2). A *store* holds a closed fact set: the facts are
asserted into a private module (SWI-Prolog's JIT indexes serve the joins) and recorded in a
trie (membership in constant time). Saturation is semi-naive: in every round each rule is
fired once for every body position that unifies with a fact new in the previous round; the
other body atoms are looked up in the whole store. Recursion is handled by the fixpoint.

Budgets: `max_derived(N)` (number of derived facts) and `time_limit(Seconds)`. When one is
hit, the facts derived so far are returned and Status is `budget(facts)` / `budget(time)`;
otherwise Status is `complete`.

From the shell:
==
swipl prolog/rudas/chase.pl
?- chase_files('data/ds/rules.txt', 'data/ds/eval-support.txt', Derived), length(Derived, N).
==
*/
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(option)).
:- use_module(library(time)).
:- use_module(library(error)).

:- dynamic store_/4.             % store_(Store, Module, Trie, TriggerModule)

%!  chase(+Rules:list, +Facts:list, -Derived:list, +Options:list) is det.
%
%   Derived is the sorted list of facts inferred from Facts by Rules, excluding Facts
%   (I(R,F) of the RuDaS paper, §5). Throws rudas_budget(Kind, Partial) when a budget in
%   Options is hit; use chase/5 to get a status instead.
chase(Rules, Facts, Derived, Options) :-
    chase(Rules, Facts, Derived, Status, Options),
    (   Status == complete -> true
    ;   throw(rudas_budget(Status, Derived))
    ).

%!  chase(+Rules:list, +Facts:list, -Derived:list, -Status, +Options:list) is det.
%
%   As chase/4 but never throws for budgets: Status is `complete`, `budget(facts)` or
%   `budget(time)`; Derived then holds the facts found before the budget was hit.
chase(Rules, Facts, Derived, Status, Options) :-
    setup_call_cleanup(
        store_new(Store, Rules),
        ( store_add(Store, Facts, New),
          store_saturate(Store, New, Options, Derived0, Status),
          msort(Derived0, Derived) ),
        store_free(Store)).

%!  chase_files(+RulesFile, +FactsFile, -Derived:list) is det.
%
%   Read rules and facts (Prolog syntax, one clause per line) and chase them.
chase_files(RulesFile, FactsFile, Derived) :-
    read_rules(RulesFile, Rules),
    read_facts(FactsFile, Facts),
    chase(Rules, Facts, Derived, []).

%!  chase_files(+RulesFile, +FactsFile, +OutFile, +Options) is det.
%
%   As chase_files/3, writing the derived facts to OutFile, one per line.
chase_files(RulesFile, FactsFile, OutFile, Options) :-
    read_rules(RulesFile, Rules),
    read_facts(FactsFile, Facts),
    chase(Rules, Facts, Derived, Status, Options),
    setup_call_cleanup(open(OutFile, write, S),
                       forall(member(F, Derived), format(S, "~q.~n", [F])),
                       close(S)),
    (   Status == complete -> true ; print_message(warning, format("chase stopped: ~w", [Status])) ).

%!  store_new(-Store, +Rules:list) is det.
%
%   Create an empty store for Rules (every predicate of the rules becomes dynamic there).
store_new(Store, Rules) :-
    gensym('$rudas_store_', Store),
    atom_concat(Store, '_trig', Trig),
    trie_new(Trie),
    assertz(store_(Store, Store, Trie, Trig)),
    dynamic(Trig:trigger/4),
    dynamic(Trig:derived/1),
    forall(( member(rule(H, B), Rules), member(A, [H|B]) ),
           declare(Store, A)),
    forall(nth1(I, Rules, rule(H, B)), add_triggers(Store, Trig, I, H, B)).

declare(Store, Atom) :-
    functor(Atom, N, A),
    (   current_predicate(Store:N/A) -> true ; dynamic(Store:N/A) ).

%   trigger(DeltaAtom, Head, Goal, RuleIndex): firing Goal for DeltaAtom yields Head.
add_triggers(Store, Trig, I, H, []) :- !,
    assertz(Trig:trigger('$fact', H, true, I)),
    (   ground(H) -> true ; type_error(safe_rule, H) ),
    ignore(Store = Store).
add_triggers(Store, Trig, I, H, Body) :-
    forall(select(Sel, Body, Rest),
           ( order_rest(Sel, Rest, Ordered),
             goal_of(Store, Ordered, Goal),
             assertz(Trig:trigger(Sel, H, Goal, I)) )).

%   Put body atoms that share variables with what is bound first (cheap greedy join order).
order_rest(Sel, Rest, Ordered) :-
    term_variables(Sel, Bound),
    order_rest_(Rest, Bound, Ordered).
order_rest_([], _, []) :- !.
order_rest_(Atoms, Bound, [Best|Ordered]) :-
    map_list_to_pairs(score(Bound), Atoms, Scored),
    keysort(Scored, Sorted),
    Sorted = [_-Best|_],
    selectchk_eq(Best, Atoms, Rest),
    term_variables(Best, Vs),
    append(Bound, Vs, Bound1),
    order_rest_(Rest, Bound1, Ordered).

score(Bound, Atom, Score) :-
    term_variables(Atom, Vs),
    exclude(bound_in(Bound), Vs, Free),
    length(Free, NF),
    Atom =.. [_|Args], length(Args, N),
    Score is NF*10 - N.

bound_in(Bound, V) :- memberchk_eq(V, Bound).
memberchk_eq(X, [Y|Ys]) :- ( X == Y -> true ; memberchk_eq(X, Ys) ).
selectchk_eq(X, [Y|Ys], Rest) :- ( X == Y -> Rest = Ys ; Rest = [Y|R1], selectchk_eq(X, Ys, R1) ).

goal_of(_, [], true) :- !.
goal_of(Store, [A], Store:A) :- !.
goal_of(Store, [A|As], (Store:A, G)) :- goal_of(Store, As, G).

%!  store_free(+Store) is det.
%
%   Remove the store's facts, trie and triggers.
store_free(Store) :-
    (   retract(store_(Store, M, Trie, Trig))
    ->  forall(( current_predicate(M:N/A), functor(H, N, A),
                 \+ predicate_property(M:H, imported_from(_)) ),
               abolish(M:N/A)),
        catch(abolish(Trig:trigger/4), _, true),
        catch(abolish(Trig:derived/1), _, true),
        trie_destroy(Trie)
    ;   true
    ).

%!  store_add(+Store, +Facts:list, -New:list) is det.
%
%   Add Facts to Store; New are those that were not there yet (in the order given).
store_add(Store, Facts, New) :-
    store_(Store, M, Trie, _),
    add_new(Facts, M, Trie, New).

add_new([], _, _, []).
add_new([F|Fs], M, Trie, New) :-
    (   trie_insert(Trie, F)
    ->  declare(M, F),
        assertz(M:F),
        New = [F|New1]
    ;   New = New1
    ),
    add_new(Fs, M, Trie, New1).

%!  store_has(+Store, +Fact) is semidet.
store_has(Store, Fact) :-
    store_(Store, _, Trie, _),
    trie_lookup(Trie, Fact, _).

%!  store_count(+Store, -Count:integer) is det.
store_count(Store, Count) :-
    store_(Store, _, Trie, _),
    trie_property(Trie, value_count(Count)).

%!  store_saturate(+Store, +Delta:list, +Options, -Derived:list, -Status) is det.
%
%   Close Store under its rules, given that Delta are the facts added since it was last
%   closed. Derived are the facts inferred (unsorted); Status as in chase/5.
store_saturate(Store, Delta, Options, Derived, Status) :-
    store_(Store, M, Trie, Trig),
    option(max_derived(Max), Options, inf),
    option(time_limit(TL), Options, inf),
    retractall(Trig:derived(_)),
    nb_setval('$rudas_derived', 0),
    Run = ( facts_rules(M, Trie, Trig, Max, New0),
            append(Delta, New0, Delta1),
            rounds(Delta1, M, Trie, Trig, Max) ),
    catch(( TL == inf -> call(Run) ; call_with_time_limit(TL, Run) ),
          E, budget_status(E, Status0)),
    ( var(Status0) -> Status = complete ; Status = Status0 ),
    findall(F, Trig:derived(F), Derived),
    retractall(Trig:derived(_)).

budget_status(time_limit_exceeded, budget(time)) :- !.
budget_status(rudas_budget_facts, budget(facts)) :- !.
budget_status(E, _) :- throw(E).

%   Rules with an empty body (ground facts of a program) fire once.
facts_rules(M, Trie, Trig, Max, New) :-
    findall(H, ( Trig:trigger('$fact', H, true, _), add_fact(M, Trie, Trig, Max, H) ), New).

rounds([], _, _, _, _) :- !.
rounds(Delta, M, Trie, Trig, Max) :-
    findall(H,
            ( member(D, Delta),
              Trig:trigger(D, H, Goal, _),
              call(Goal),
              add_fact(M, Trie, Trig, Max, H) ),
            New),
    rounds(New, M, Trie, Trig, Max).

add_fact(M, Trie, Trig, Max, H) :-
    trie_insert(Trie, H),
    assertz(M:H),
    assertz(Trig:derived(H)),
    nb_getval('$rudas_derived', N0),
    N is N0 + 1,
    nb_setval('$rudas_derived', N),
    (   N >= Max -> throw(rudas_budget_facts) ; true ).

%!  read_rules(+File, -Rules:list) is det.
%
%   Read a rules file (trusted: a dataset's rules.txt) into rule(Head, Body) terms.
read_rules(File, Rules) :-
    read_file_terms(File, Terms),
    maplist(rule_term, Rules, Terms).

%!  read_facts(+File, -Facts:list) is det.
read_facts(File, Facts) :-
    read_file_terms(File, Facts).

read_file_terms(File, Terms) :-
    setup_call_cleanup(open(File, read, S), read_all(S, Terms), close(S)).

read_all(S, Terms) :-
    read_term(S, T, []),
    (   T == end_of_file -> Terms = [] ; Terms = [T|Ts], read_all(S, Ts) ).

%!  rule_term(?Rule, ?Clause) is det.
%
%   Convert between rule(Head, BodyList) and a clause `Head :- B1, ..., Bn` (or `Head`).
rule_term(rule(H, B), Clause) :-
    nonvar(Clause), !,
    (   Clause = (H :- Conj) -> conj_list(Conj, B) ; H = Clause, B = [] ).
rule_term(rule(H, []), H) :- !.
rule_term(rule(H, B), (H :- Conj)) :- conj_list(Conj, B).

conj_list(Conj, List) :-
    nonvar(Conj), !,
    (   Conj = (A, Bs) -> List = [A|L], conj_list(Bs, L) ; List = [Conj] ).
conj_list(Conj, [A]) :- !, Conj = A.
conj_list((A, C), [A|As]) :- conj_list(C, As).
