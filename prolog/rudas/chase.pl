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
facts are ground atoms such as p3(c1,c2). A *store* holds a closed fact set: each fact is
asserted into a private module, tagged with the round that derived it (SWI-Prolog's JIT
hash indexes serve the joins), and recorded in a trie (membership in constant time).

Saturation is exact semi-naive evaluation: every combination of body facts is considered
once over the whole fixpoint (round K joins the facts new in K at body position i with
older facts before i and facts up to K after it). Rules are compiled into join plans from
statistics of the store (facts and distinct values per argument), recompiled when a
predicate's size changes by more than a factor 2:

  - the join starts from the new facts, projected onto the variables the rest of the rule
    needs and deduplicated; the other atoms follow greedily by estimated matches (count /
    distinct values of every bound argument); after each atom the tuples are projected
    onto the variables still needed and deduplicated (set at a time, in chunks sized by
    the estimated fan-out, so memory stays bounded);
  - an atom with all arguments bound is a trie lookup; one whose new variables nobody
    needs is a once/1 test; one with some unneeded variables reads a projection of its
    predicate (its distinct values on the other arguments);
  - once the head is ground, a known head stops the join and the rest of the body is one
    existence test;
  - per rule and round, when the estimated forward work exceeds the cost of checking every
    not-yet-known candidate head (the product of the values its variables can take) with
    one existence test, the rule is fired backward instead (plan(auto), the default;
    plan(forward) / plan(backward) force one way; all give the same facts).

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
:- use_module('../safe_load', [with_time_limit/2]).
:- use_module(library(error)).
:- use_module(library(pairs)).
:- use_module(library(aggregate)).
:- use_module('../progress').
:- use_module(datalog, [read_datalog_file/3]).
:- use_module(messages, []).          % how rudas_budget/2 prints
:- use_module(library(assoc)).
:- use_module(library(solution_sequences)).

:- dynamic store_/4.             % store_(Store, FactModule, Trie, TriggerModule)

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
%   Options: max_derived(N), time_limit(Seconds), plan(auto|forward|backward) (how rules
%   fire, see the module comment; the facts are the same), backward_min_work(W) (auto
%   considers firing a rule backward only when its estimated forward work exceeds W;
%   default 50000), progress(Phase) (report the facts derived so far under Phase through
%   nesy_progress:progress/3, every round and every 4096 facts; a no-op without a listener).
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

% ---------------------------------------------------------------------------------------
% The store
%
% A fact p(A1,...,An) derived (or added) in round K is kept twice:
%   - in the trie, as key p(A1,...,An) with value K (membership, and body atoms whose
%     arguments are all bound, in constant time);
%   - as a clause 'p/n'(A1,...,An,K) of a dynamic predicate of the fact module (the
%     internal name keeps p/2 and p/3 apart), whose JIT hash indexes serve the joins.
% Projections used by the join plans ('p/n#2'(A2,K): the distinct second arguments, K the
% first round with that value) are kept the same way, with their own trie.
% The trigger module holds, per store: int(Name, Arity, Internal); rule_(I, Head, Body);
% the compiled plans (plan_preds/1; see compile_trigger/5 and compile_backward/4);
% proj/3 (the projections); ckey/2 (the flags counting facts); stat(Internal, Count,
% Distinct) (the statistics the plans were made with); round(Pending) (the round of facts
% added by store_add/3); ptrie(Trie); fired; bwd_now/2 (rules fired backward this round).

trig_preds([int/3, rule_/3, round/1, ptrie/1, fired/0, proj/3, ckey/2, stat/3, bwd_now/2
            | Plans]) :-
    plan_preds(Plans).

%   The compiled plans, dropped when the plans are recompiled.
plan_preds([trig/5, trig_cost/2, stage/6, stage_sol/5, stage_join/6, stage_fanout/3,
            bwd_info/4, bwd_est/4, bbody/3, bwd_doms/2]).

%!  store_new(-Store, +Rules:list) is det.
%
%   Create an empty store for Rules (rule(Head, Body) terms; Body a list of atoms). Throws
%   type_error(safe_rule, Rule) for a rule with a head variable that is not in its body.
store_new(Store, Rules) :-
    gensym('$rudas_store_', Store),
    atom_concat(Store, '_trig', Trig),
    trie_new(Trie),
    trie_new(PTrie),
    assertz(store_(Store, Store, Trie, Trig)),
    trig_preds(PIs),
    forall(member(PI, PIs), dynamic(Trig:PI)),
    assertz(Trig:round(1)),
    assertz(Trig:ptrie(PTrie)),
    forall(nth1(I, Rules, R), add_rule(Store, Trig, I, R)).

add_rule(Store, Trig, I, Rule) :-
    Rule = rule(H, B),
    term_variables(H, HVs), term_variables(B, BVs),
    (   member(V, HVs), \+ memberchk_eq(V, BVs) -> type_error(safe_rule, Rule) ; true ),
    forall(member(A, [H|B]), internal_name(Store, Trig, A, _)),
    assertz(Trig:rule_(I, H, B)).

%   internal_name(+Store, +Trig, +Atom, -Internal): 'p/2' for p(_,_), declared on first use.
internal_name(Store, Trig, Atom, Int) :-
    functor(Atom, N, A),
    (   Trig:int(N, A, Int0)
    ->  Int = Int0
    ;   format(atom(Int), "~w/~w", [N, A]),
        A1 is A + 1,
        dynamic(Store:Int/A1),
        count_key(Store, Trig, Int),
        assertz(Trig:int(N, A, Int))
    ).

%   Number of facts of a predicate or projection, kept in a flag (number_of_clauses of a
%   dynamic predicate costs a scan).
count_key(Store, Trig, Name) :-
    atomic_list_concat([Store, '|', Name], CK),
    flag(CK, _, 0),
    assertz(Trig:ckey(Name, CK)).

count_up(Trig, Name) :-
    Trig:ckey(Name, CK),
    flag(CK, C, C + 1).

pred_count(Trig, Name, N) :-
    (   Trig:ckey(Name, CK) -> flag(CK, N, N) ; N = 0 ).

%!  store_free(+Store) is det.
%
%   Remove the store's facts, tries and compiled rules.
store_free(Store) :-
    (   retract(store_(Store, M, Trie, Trig))
    ->  forall(( Trig:int(_, A, Int), A1 is A + 1 ), abolish(M:Int/A1)),
        forall(( Trig:proj(_, PN, Mask), length(Mask, L), L1 is L + 1 ), abolish(M:PN/L1)),
        forall(Trig:ptrie(PT), trie_destroy(PT)),
        trig_preds(PIs),
        forall(member(PI, PIs), catch(abolish(Trig:PI), _, true)),
        trie_destroy(Trie)
    ;   true
    ).

%!  store_add(+Store, +Facts:list, -New:list) is det.
%
%   Add Facts to Store; New are those that were not there yet (in the order given).
store_add(Store, Facts, New) :-
    store_(Store, M, Trie, Trig),
    Trig:round(K),
    add_new(Facts, Store, M, Trie, Trig, K, New).

add_new([], _, _, _, _, _, []).
add_new([F|Fs], Store, M, Trie, Trig, K, New) :-
    (   \+ trie_lookup(Trie, F, _)
    ->  trie_insert(Trie, F, K),
        internal_name(Store, Trig, F, Int),
        F =.. [_|Args], append(Args, [K], Args1), FI =.. [Int|Args1],
        assertz(M:FI),
        count_up(Trig, Int),
        add_projections(M, Trig, Int, F, K),
        New = [F|New1]
    ;   New = New1
    ),
    add_new(Fs, Store, M, Trie, Trig, K, New1).

%!  store_has(+Store, +Fact) is semidet.
store_has(Store, Fact) :-
    store_(Store, _, Trie, _),
    trie_lookup(Trie, Fact, _).

%!  store_count(+Store, -Count:integer) is det.
store_count(Store, Count) :-
    store_(Store, _, Trie, _),
    trie_property(Trie, value_count(Count)).

% ---------------------------------------------------------------------------------------
% Saturation

%!  store_saturate(+Store, +Delta:list, +Options, -Derived:list, -Status) is det.
%
%   Close Store under its rules, given that Delta are the facts added (store_add/3) since it
%   was last closed. Derived are the facts inferred (unsorted); Status as in chase/5.
%
%   Exact semi-naive evaluation: round K joins, for every rule and body position i, the
%   facts of round K at position i with facts of rounds < K at the positions before i and
%   of rounds =< K after it, so every combination of body facts is considered once over
%   the whole fixpoint. The join plans are compiled (compile_trigger/5) from statistics of
%   the store and recompiled when a predicate's size changes by more than a factor 2.
store_saturate(Store, Delta, Options, Derived, Status) :-
    store_(Store, M, Trie, Trig),
    option(max_derived(Max), Options, inf),
    option(time_limit(TL), Options, inf),
    option(plan(Plan), Options, auto),
    must_be(oneof([auto, forward, backward]), Plan),
    nb_setval('$rudas_plan', Plan),
    option(backward_min_work(MinWork), Options, 50000),
    nb_setval('$rudas_min_work', MinWork),
    retract(Trig:round(K0)),
    nb_setval('$rudas_derived', 0),
    nb_setval('$rudas_round', K0),
    option(progress(Phase), Options, none),     % report facts derived under Phase
    nb_setval('$rudas_progress', Phase),
    chase_progress(0),
    Ctx = ctx(Store, M, Trie, Trig, Max),
    Run = ( fact_rules(Ctx, K0, Facts),
            append(Delta, Facts, Delta1),
            rounds(Ctx, K0, Delta1, [Facts], Acc) ),
    catch(( TL == inf -> call(Run) ; with_time_limit(TL, Run) ),
          E, budget_status(E, Status0)),
    nb_getval('$rudas_round', KEnd),
    (   var(Status0)
    ->  Status = complete,
        append(Acc, Derived)
    ;   Status = Status0,                   % every fact of a round > K0 is derived
        findall(F, ( trie_gen(Trie, F, R), R > K0 ), Derived)
    ),
    KNext is KEnd + 2,                      % after a budget stop, round KEnd+1 is partial
    assertz(Trig:round(KNext)).

budget_status(time_limit_exceeded, budget(time)) :- !.
budget_status(rudas_budget_facts, budget(facts)) :- !.
budget_status(E, _) :- throw(E).

%   Rules with an empty body (ground facts of a program) fire once, in the first round.
fact_rules(Ctx, K, New) :-
    Ctx = ctx(_, _, _, Trig, _),
    (   Trig:fired
    ->  New = []
    ;   assertz(Trig:fired),
        findall(H, ( Trig:rule_(_, H, []), add_fact(Ctx, K, H) ), New)
    ).

%   rounds(+Ctx, +K, +Delta, +Acc0, -Acc): Delta are the facts of round K.
rounds(_, K, [], Acc, Acc) :- !,
    nb_setval('$rudas_round', K).
rounds(Ctx, K, Delta, Acc0, Acc) :-
    Ctx = ctx(_, _, _, Trig, _),
    nb_setval('$rudas_round', K),
    nb_getval('$rudas_derived', Derived),
    chase_progress(Derived),
    compile_plans(Ctx),
    group_delta(Trig, Delta, Groups),
    K1 is K + 1,
    retractall(Trig:bwd_now(_, _)),
    delta_keys(Trig, Groups, KeyCache),
    findall(H,
            ( Trig:rule_(RI, _, [_|_]),
              fire_rule(Ctx, K, RI, KeyCache, H),
              add_fact(Ctx, K1, H) ),
            New1),
    findall(H,
            ( setof(RI, Trig:bwd_now(HInt, RI), RIs),
              backward_group(Ctx, HInt, RIs, H),
              add_fact(Ctx, K1, H) ),
            New2),
    append(New1, New2, New),
    (   New == [] -> Acc = Acc0
    ;   rounds(Ctx, K1, New, [New|Acc0], Acc)
    ).

%   delta_keys(+Trig, +Groups, -Cache): the join keys of the delta facts for every trigger
%   pattern (delta atom and key, up to variable renaming) that has delta facts: an assoc
%   from the pattern's variant hash to the sorted keys (many rules share a pattern).
delta_keys(Trig, Groups, Cache) :-
    findall(Hash-(Int-Sel-Key),
            ( member(Int-_, Groups),
              Trig:trig(Int, _, _, Sel, Key),
              variant_sha1(Sel-Key, Hash) ),
            Ps0),
    sort(1, @<, Ps0, Ps),
    maplist(pattern_keys(Groups), Ps, KVs),
    list_to_assoc(KVs, Cache).

pattern_keys(Groups, Hash-(Int-Sel-Key), Hash-Keys) :-
    memberchk(Int-Ds, Groups),
    findall(Key, member(Sel, Ds), Keys0),
    sort(Keys0, Keys).

%   fire_rule(+Ctx, +K, +RuleIndex, +KeyCache, -Head): the heads rule RI derives in
%   round K. Forward: every trigger whose predicate has delta facts runs its stages on the
%   join keys of those facts. Backward: every candidate head (the product of the values
%   its variables can take, from projections of the body) that is not known yet is checked
%   with one existence test of the body over the whole store. The cheaper one by the
%   estimates is taken: backward wins when the head predicate is nearly complete and the
%   forward joins are dense (learned programs full of bad rules).
fire_rule(Ctx, K, RI, KeyCache, H) :-
    Ctx = ctx(_, _, _, Trig, _),
    findall(Id-Hash,
            ( Trig:trig(_, RI, Id, Sel, Key),
              variant_sha1(Sel-Key, Hash),
              get_assoc(Hash, KeyCache, _) ),
            IHs),
    maplist(cached_keys(KeyCache), IHs, TKs),          % (findall would copy the keys)
    TKs \== [],
    nb_getval('$rudas_plan', Plan),
    (   (   Plan == backward
        ->  backward_plan(Ctx, RI)
        ;   Plan == auto,
            foldl(forward_cost(Trig), TKs, 0.0, Fwd),
            nb_getval('$rudas_min_work', MinWork),
            Fwd > MinWork,
            backward_estimate(Trig, RI, Est),      % from the statistics, before projections
            Est < Fwd,
            backward_plan(Ctx, RI),
            backward_cost(Trig, RI, Bwd),
            Bwd < Fwd
        )
    ->  Trig:bwd_info(RI, _, HInt-_, _),
        assertz(Trig:bwd_now(HInt, RI)),
        fail
    ;   member(Id-Keys, TKs),
        produce(Ctx, K, Id, 1, Keys, H)
    ).

cached_keys(Cache, Id-Hash, Id-Keys) :- get_assoc(Hash, Cache, Keys).

forward_cost(Trig, Id-Keys, C0, C) :-
    Trig:trig_cost(Id, PerKey),
    length(Keys, N),
    C is C0 + N * PerKey.

%   Backward cost from the statistics: each head variable ranges over the distinct values
%   of its position with fewest of them.
backward_estimate(Trig, RI, Cost) :-
    Trig:bwd_est(RI, Positions, HeadInt, Check),
    foldl(position_domain(Trig), Positions, 1, Cand),
    pred_count(Trig, HeadInt, NH),
    Missing is max(Cand - NH, 0) + 1,
    Cost is Cand + Missing * Check.

position_domain(Trig, Int-I, C0, C) :-
    (   Trig:stat(Int, _, Ds) -> nth1(I, Ds, D) ; D = 0 ),
    C is C0 * D.

%   backward_group(+Ctx, +HeadInt, +RIs, -H): the rules RIs with head predicate HeadInt,
%   fired backward together: the candidates are the tuples over the union of the rules'
%   domains per head argument; each unknown one is derived by the first rule whose body
%   holds for it.
backward_group(Ctx, HInt, RIs, H) :-
    Ctx = ctx(_, M, Trie, Trig, _),
    findall(Doms, ( member(RI, RIs), Trig:bwd_doms(RI, Doms) ), DomLists),
    Trig:int(N, A, HInt),
    numlist(1, A, Is),
    maplist(union_domain(M, DomLists), Is, Values),
    functor(H, N, A),
    H =.. [_|Args],
    maplist(member, Args, Values),
    \+ trie_lookup(Trie, H, _),
    once(( member(RI, RIs), Trig:bbody(RI, Trie, H) )).

union_domain(M, DomLists, I, Values) :-
    findall(V, ( member(Doms, DomLists), nth1(I, Doms, D),
                 (   D = const(V) -> true
                 ;   D = dom(PN), PI =.. [PN, V, _], M:PI
                 ) ),
            Vs),
    sort(Vs, Values).

%   The backward plan of a rule is compiled on first use (it creates projections).
backward_plan(Ctx, RI) :-
    Ctx = ctx(_, _, _, Trig, _),
    (   Trig:bwd_info(RI, _, _, _) -> true
    ;   Trig:rule_(RI, H, B), compile_backward(Ctx, RI, H, B)
    ).

backward_cost(Trig, RI, Cost) :-
    Trig:bwd_info(RI, Doms, HeadInt-_, Check),
    foldl(dom_size(Trig), Doms, 1, Cand),
    pred_count(Trig, HeadInt, NH),
    Missing is max(Cand - NH, 0) + 1,
    Cost is Cand + Missing * Check.

dom_size(Trig, PN, C0, C) :-
    pred_count(Trig, PN, N),
    C is C0 * N.

%   produce(+Ctx, +K, +Id, +Step, +Tuples, -Head): run the stages of trigger Id from Step on
%   the (distinct) tuples of live variables; Head is a ground head atom. Each stage maps a
%   set of tuples to the sorted set of tuples of the variables still needed, in chunks small
%   enough for the stage's estimated fan-out (bounded memory).
produce(Ctx, K, Id, Step, Tuples, H) :-
    Ctx = ctx(_, _, Trie, Trig, _),
    (   Trig:stage_fanout(Id, Step, Fanout)
    ->  (   clause(Trig:stage_join(Id, Step, _, _, _, _), _)
        ->  findall(S, Trig:stage_sol(Id, Step, K, Trie, S), Ss0),
            sort(Ss0, Ss),
            length(Ss, NS),
            Chunk is max(1, min(1 << 20, 200000 // max(1, NS))),
            chunk(Tuples, Chunk, Part),
            findall(Out, ( member(In, Part), member(S, Ss),
                           Trig:stage_join(Id, Step, In, S, Trie, Out) ), Outs0)
        ;   Chunk is max(1, min(1 << 20, truncate(200000 / max(1.0, Fanout)))),
            chunk(Tuples, Chunk, Part),
            findall(Out, ( member(In, Part), Trig:stage(Id, Step, In, K, Trie, Out) ), Outs0)
        ),
        sort(Outs0, Outs),
        Step1 is Step + 1,
        produce(Ctx, K, Id, Step1, Outs, H)
    ;   member(H, Tuples)
    ).

chunk(List, N, Part) :-
    take(N, List, P0, Rest),
    (   Rest == [] -> Part = P0
    ;   ( Part = P0 ; chunk(Rest, N, Part) )
    ).

take(0, L, [], L) :- !.
take(_, [], [], []) :- !.
take(N, [X|Xs], [X|Ys], Rest) :- N1 is N - 1, take(N1, Xs, Ys, Rest).

group_delta(Trig, Delta, Groups) :-
    map_list_to_pairs(fact_int(Trig), Delta, Pairs0),
    exclude(none_key, Pairs0, Pairs),
    keysort(Pairs, Sorted),
    group_pairs_by_key(Sorted, Groups).

fact_int(Trig, F, Int) :-
    functor(F, N, A),
    ( Trig:int(N, A, Int) -> true ; Int = none ).

%   add_fact(+Ctx, +Round, +Fact): add a new derived fact (fails if it is known).
%   (trie_insert/3 raises an error for a known key with another value: look up first.)
add_fact(ctx(_, M, Trie, Trig, Max), K, H) :-
    \+ trie_lookup(Trie, H, _),
    trie_insert(Trie, H, K),
    functor(H, N, A), Trig:int(N, A, Int),
    H =.. [_|Args], append(Args, [K], Args1), HI =.. [Int|Args1],
    assertz(M:HI),
    count_up(Trig, Int),
    add_projections(M, Trig, Int, H, K),
    nb_getval('$rudas_derived', C0),
    C is C0 + 1,
    nb_setval('$rudas_derived', C),
    (   C /\ 4095 =:= 0 -> chase_progress(C) ; true ),
    (   C >= Max -> throw(rudas_budget_facts) ; true ).

%   chase_progress(+Derived): report the facts derived so far when the chase was given a
%   progress(Phase) option (every round, and every 4096 facts inside a round).
chase_progress(C) :-
    (   nb_current('$rudas_progress', Phase), Phase \== none
    ->  progress(Phase, C, none)
    ;   true
    ).

add_projections(M, Trig, Int, F, K) :-
    (   Trig:proj(Int, _, _)
    ->  Trig:ptrie(PT),
        forall(Trig:proj(Int, PN, Mask), add_projection(M, Trig, PT, PN, Mask, F, K))
    ;   true
    ).

add_projection(M, Trig, PT, PN, Mask, F, K) :-
    project(Mask, F, Vals),
    PK =.. [PN|Vals],
    (   trie_lookup(PT, PK, _) -> true
    ;   trie_insert(PT, PK, K),
        append(Vals, [K], Args), PI =.. [PN|Args],
        assertz(M:PI),
        count_up(Trig, PN)
    ).

project([], _, []).
project([I|Is], F, [V|Vs]) :- arg(I, F, V), project(Is, F, Vs).

% ---------------------------------------------------------------------------------------
% Join plans

%   compile_plans(+Ctx): (re)compile the triggers when the size of some predicate has
%   changed by more than a factor 2 since the plans were made.
compile_plans(Ctx) :-
    Ctx = ctx(_, M, _, Trig, _),
    findall(Int-N, ( Trig:int(_, _, Int), pred_count(Trig, Int, N) ), Counts),
    (   Trig:trig(_, _, _, _, _),
        forall(member(Int-N, Counts),
               ( Trig:stat(Int, N0, _), same_bucket(N0, N) ))
    ->  true
    ;   update_stats(M, Trig, Counts),
        plan_preds(Plans),
        forall(member(N/A, Plans), ( functor(G, N, A), retractall(Trig:G) )),
        flag('$rudas_trigger', _, 0),
        forall(Trig:rule_(RI, H, B), compile_rule(Ctx, RI, H, B))
    ).


same_bucket(N0, N) :- bucket(N0, B), bucket(N, B).
bucket(N, B) :- B is msb(N + 1).

update_stats(M, Trig, Counts) :-
    forall(member(Int-N, Counts),
           (   Trig:stat(Int, N0, _), same_bucket(N0, N)
           ->  true
           ;   retractall(Trig:stat(Int, _, _)),
               distinct_counts(M, Trig, Int, N, Ds),
               assertz(Trig:stat(Int, N, Ds))
           )).

%   Number of distinct values per argument (only used to order joins): exact up to 20,000
%   facts; above, the JIT index of the argument when SWI-Prolog has built one, else an
%   estimate from the first 20,000 facts (mostly distinct: scaled up; else as is).
distinct_counts(M, Trig, Int, N, Ds) :-
    Trig:int(_, A, Int), A1 is A + 1,
    functor(G, Int, A1),
    (   N > 20000, predicate_property(M:G, indexed(Ix)) -> true ; Ix = [] ),
    numlist(1, A, Is),
    maplist(distinct_count(M, G, N, Ix), Is, Ds).

distinct_count(_, _, 0, _, _, 0) :- !.
distinct_count(_, _, _, Ix, I, D) :-
    memberchk(single(I)-hash(_, Speedup, _, _), Ix), !,
    D is max(1, round(Speedup)).
distinct_count(M, G, N, _, I, D) :-
    Sample = 20000,
    findall(V, limit(Sample, ( M:G, arg(I, G, V) )), Vs),
    sort(Vs, Set), length(Set, D0),
    (   N =< Sample -> D = D0
    ;   D0 * 2 > Sample -> D is round(D0 * N / Sample)
    ;   D = D0
    ).

compile_rule(_, _, _, []) :- !.
compile_rule(Ctx, RI, H, B) :-
    length(B, NB),
    forall(between(1, NB, Pos), compile_trigger(Ctx, RI, H, B, Pos)),
    backward_estimate_info(Ctx, RI, H, B).

backward_estimate_info(Ctx, RI, H0, B0) :-
    Ctx = ctx(_, _, _, Trig, _),
    copy_term(H0-B0, H-B),
    term_variables(H, HVs),
    maplist(head_position(Trig, B), HVs, Positions),
    maplist(pair_any, B, All),
    order_atoms(Trig, All, HVs, Ordered),
    path_cost(Trig, Ordered, HVs, Check),
    fact_int(Trig, H, HInt),
    assertz(Trig:bwd_est(RI, Positions, HInt, Check)).

%   The body position of head variable V with the fewest distinct values.
head_position(Trig, B, V, Int-I) :-
    findall(D-(Int0-I0), ( member(A, B), arg(I0, A, T), T == V, fact_int(Trig, A, Int0),
                           ( Trig:stat(Int0, _, Ds) -> nth1(I0, Ds, D) ; D = 0 ) ), Cands),
    keysort(Cands, [_-(Int-I)|_]).

%   compile_backward(+Ctx, +RI, +Head, +Body): bbody(RI, Trie, Head), one existence test of
%   the body for a ground head, and bwd_doms(RI, Doms), where each head argument's
%   candidates come from: dom(P), the one-argument projection P of the body position of
%   its variable with fewest distinct values, or const(C).
compile_backward(Ctx, RI, H0, B0) :-
    Ctx = ctx(_, _, _, Trig, _),
    copy_term(H0-B0, H-B),
    term_variables(H, HVs),
    maplist(head_domain(Ctx, B), HVs, Doms),
    maplist(pair_any, B, All0),
    order_atoms(Trig, All0, HVs, Ordered),
    body_goal(Ordered, HVs, H, Ctx, _K, Trie, G),
    path_cost(Trig, Ordered, HVs, Check),
    functor(H, HN, HA), Trig:int(HN, HA, HInt), HA1 is HA + 1,
    assertz(Trig:(bbody(RI, Trie, H) :- once(G))),
    H =.. [_|HArgs],
    maplist(arg_domain(HVs, Doms), HArgs, ArgDoms),
    assertz(Trig:bwd_doms(RI, ArgDoms)),
    assertz(Trig:bwd_info(RI, Doms, HInt-HA1, Check)).

arg_domain(HVs, Doms, T, D) :-
    (   var(T) -> nth1_eq(HVs, Doms, T, PN), D = dom(PN) ; D = const(T) ).

nth1_eq([V|Vs], [D|Ds], T, PN) :- ( V == T -> PN = D ; nth1_eq(Vs, Ds, T, PN) ).

pair_any(A, A-any).

head_domain(Ctx, B, V, PN) :-
    Ctx = ctx(_, _, _, Trig, _),
    head_position(Trig, B, V, Int-I),
    member(A, B), fact_int(Trig, A, Int), arg(I, A, T), T == V, !,
    projection(Ctx, A, [I], PN).


%   Estimated work per input tuple of a sequence of atoms: 1 + f1 + f1*f2 + ...
path_cost(Trig, Atoms, Bound, Cost) :-
    path_cost_(Atoms, Trig, Bound, 1.0, 1.0, Cost).
path_cost_([], _, _, _, C, C).
path_cost_([A|As], Trig, Bound, W0, C0, C) :-
    atom_cost(Trig, Bound, A, F),
    W is min(1.0e12, W0 * max(F, 0.0)),
    C1 is min(1.0e15, C0 + W),
    A = At-_, term_variables(At, Vs), append(Bound, Vs, Bound1),
    path_cost_(As, Trig, Bound1, W, C1, C).

%!  compile_trigger(+Ctx, +RuleIndex, +Head, +Body, +Pos) is det.
%
%   One trigger: the body atom at Pos takes the facts of round K; its join key is the tuple
%   of its variables that the rest of the rule needs (deduplicated). The other atoms are
%   ordered greedily by their estimated number of matches given the variables bound so far
%   (count x 1/distinct for every bound argument, from stat/3). Each atom becomes one stage
%   stage(Id, Step, In, K, Trie, Out) from the tuple In of live variables to the tuple Out
%   of those still needed later (the executor deduplicates Out): an atom whose variables
%   are all bound is a trie lookup; one whose new variables nobody needs is a once/1 test;
%   one with some unneeded (singleton) variables reads a projection of its predicate. As
%   soon as the head is ground, the rest of the body becomes one last stage: skip a head
%   that is already known, else one existence test for the rest. The last stage outputs
%   the head atom.
compile_trigger(Ctx, RI, H0, B0, Pos) :-
    Ctx = ctx(_, _, _, Trig, _),
    copy_term(H0-B0, H-B),
    nth1(Pos, B, Sel),
    rest_atoms(B, 1, Pos, Rest),
    term_variables(Sel, SelVs),
    later_vars(Rest, H, Later),
    include(in_vars(Later), SelVs, KeyVs),
    Key =.. [k|KeyVs],
    order_atoms(Trig, Rest, KeyVs, Ordered),
    flag('$rudas_trigger', Id, Id + 1),
    term_variables(H, HVs),
    compile_stages(Ordered, 1, KeyVs, Key, H, HVs, Ctx, Id),
    path_cost(Trig, Ordered, KeyVs, PerKey),
    fact_int(Trig, Sel, Int),
    assertz(Trig:trig_cost(Id, PerKey)),
    assertz(Trig:trig(Int, RI, Id, Sel, Key)).

%   compile_stages(+Atoms, +Step, +Bound, +In, +H, +HVs, +Ctx, +Id)
compile_stages([], Step, _, In, H, _, Ctx, Id) :- !,
    (   Step =:= 1                          % a single-atom body: key -> head
    ->  Ctx = ctx(_, _, _, Trig, _),
        assertz(Trig:(stage(Id, 1, In, _, Trie, H) :- \+ trie_lookup(Trie, H, _))),
        assertz(Trig:stage_fanout(Id, 1, 1.0))
    ;   true
    ).
compile_stages(Atoms, Step, Bound, In, H, HVs, Ctx, Id) :-
    forall(member(V, HVs), memberchk_eq(V, Bound)), !,
    Ctx = ctx(_, _, _, Trig, _),
    body_goal(Atoms, Bound, H, Ctx, K, Trie, G),
    assertz(Trig:(stage(Id, Step, In, K, Trie, H) :- \+ trie_lookup(Trie, H, _), once(G))),
    assertz(Trig:stage_fanout(Id, Step, 1.0)).
compile_stages([A-Flt|As], Step, Bound, In, H, HVs, Ctx, Id) :-
    Ctx = ctx(_, _, _, Trig, _),
    later_vars(As, H, Later),
    atom_goal(A, Flt, Bound, Later, Ctx, K, Trie, G),
    atom_cost(Trig, Bound, A-Flt, Fanout),
    term_variables(A, Vs), append(Bound, Vs, Bound1),
    include(in_vars(Later), Bound1, Live),
    (   As == []                            % the last stage emits unknown heads only
    ->  Out = H, New = (\+ trie_lookup(Trie, H, _))
    ;   Out =.. [k|Live], New = true
    ),
    (   Bound \== [], \+ ( member(V, Vs), memberchk_eq(V, Bound) )
    ->  % no variable in common with the input: solve the atom once per set of inputs
        include(in_vars(Live), Vs, SVs), S =.. [s|SVs],
        assertz(Trig:(stage_sol(Id, Step, K, Trie, S) :- G)),
        assertz(Trig:(stage_join(Id, Step, In, S, Trie, Out) :- New))
    ;   assertz(Trig:(stage(Id, Step, In, K, Trie, Out) :- G, New))
    ),
    assertz(Trig:stage_fanout(Id, Step, Fanout)),
    Step1 is Step + 1,
    compile_stages(As, Step1, Live, Out, H, HVs, Ctx, Id).

body_goal([], _, _, _, _, _, true) :- !.
body_goal([A-Flt|As], Bound, H, Ctx, K, Trie, (G0, G)) :-
    later_vars(As, H, Later),
    atom_goal(A, Flt, Bound, Later, Ctx, K, Trie, G0),
    term_variables(A, Vs), append(Bound, Vs, Bound1),
    body_goal(As, Bound1, H, Ctx, K, Trie, G).

%   rest_atoms(+Body, +J, +Pos, -Rest): the atoms other than the one at Pos, each paired with
%   the rounds it may come from (old: before the current one; all: up to the current one).
rest_atoms([], _, _, []).
rest_atoms([A|As], J, Pos, Rest) :-
    J1 is J + 1,
    (   J =:= Pos -> Rest = Rest1
    ;   ( J < Pos -> Flt = old ; Flt = all ), Rest = [A-Flt|Rest1]
    ),
    rest_atoms(As, J1, Pos, Rest1).

later_vars(As, H, Later) :-
    pairs_keys(As, Atoms),
    term_variables(H-Atoms, Later).

order_atoms(_, [], _, []) :- !.
order_atoms(Trig, Atoms, Bound, [Best|Ordered]) :-
    map_list_to_pairs(atom_cost(Trig, Bound), Atoms, Scored),
    keysort(Scored, [_-Best|_]),
    selectchk_eq(Best, Atoms, Rest),
    Best = A-_,
    term_variables(A, Vs),
    append(Bound, Vs, Bound1),
    order_atoms(Trig, Rest, Bound1, Ordered).

%   Estimated number of matches of Atom given the bound variables.
atom_cost(Trig, Bound, A-_, Cost) :-
    fact_int(Trig, A, Int),
    A =.. [_|Args],
    (   Trig:stat(Int, N, Ds) -> true ; N = 0, same_length(Args, Ds), maplist(=(1), Ds) ),
    atom_cost_(Args, Ds, Bound, [], N, Cost0),
    Cost is float(Cost0).

atom_cost_([], _, _, _, C, C).
atom_cost_([T|Ts], [D|Ds], Bound, Seen, C0, C) :-
    (   ( nonvar(T) ; memberchk_eq(T, Bound) ; memberchk_eq(T, Seen) )
    ->  C1 is C0 / max(1, D), Seen1 = Seen
    ;   C1 = C0, Seen1 = [T|Seen]
    ),
    atom_cost_(Ts, Ds, Bound, Seen1, C1, C).

%   atom_goal(+Atom, +Filter, +Bound, +Later, +Ctx, ?K, ?Trie, -Goal)
atom_goal(A, Flt, Bound, Later, Ctx, K, Trie, Goal) :-
    Ctx = ctx(_, M, _, Trig, _),
    term_variables(A, Vs),
    exclude(in_vars(Bound), Vs, New),
    round_test(Flt, R, K, Test),
    (   New == []
    ->  Goal = ( trie_lookup(Trie, A, R), Test )
    ;   exclude(in_vars(Later), New, Unneeded),
        (   Unneeded == []
        ->  internal_atom(Trig, A, R, AI),
            Goal = ( M:AI, Test )
        ;   same_length(Unneeded, New)
        ->  internal_atom(Trig, A, R, AI),
            Goal = once(( M:AI, Test ))
        ;   A =.. [_|Args],
            kept_positions(Args, Unneeded, Mask),
            length(Args, Ar), numlist(1, Ar, All),
            (   Mask == All
            ->  internal_atom(Trig, A, R, AI)
            ;   projection(Ctx, A, Mask, PN),
                project(Mask, A, PVals),
                append(PVals, [R], PArgs),
                AI =.. [PN|PArgs]
            ),
            Goal = ( M:AI, Test )
        )
    ).

%   Positions to keep: all but those holding an unneeded variable that occurs once.
kept_positions(Args, Unneeded, Mask) :-
    findall(I, ( nth1(I, Args, T),
                 \+ ( var(T), memberchk_eq(T, Unneeded), occurrences_eq(Args, T, 1) ) ),
            Mask).

occurrences_eq(Args, T, N) :-
    aggregate_all(count, ( member(U, Args), U == T ), N).

%   projection(+Ctx, +Atom, +Mask, -Name): the projection 'p/2#2' of Atom's predicate on
%   the positions Mask, created (from the facts already stored) on first use.
projection(ctx(_, M, _, Trig, _), A, Mask, PN) :-
    fact_int(Trig, A, Int),
    atomic_list_concat(Mask, ',', MS),
    format(atom(PN), "~w#~w", [Int, MS]),
    (   Trig:proj(Int, PN, _) -> true
    ;   length(Mask, L), L1 is L + 1,
        dynamic(M:PN/L1),
        count_key(M, Trig, PN),
        Trig:int(N, Ar, Int), functor(F, N, Ar),
        Ar1 is Ar + 1, functor(FI, Int, Ar1),
        findall(Vals-R, ( M:FI, FI =.. [_|FArgs], append(FArgs0, [R], FArgs),
                          F =.. [N|FArgs0], project(Mask, F, Vals) ), Pairs),
        msort(Pairs, Sorted),                 % the first of each key has the lowest round
        Trig:ptrie(PT),
        forall(member(Vals-R, Sorted),
               (   PK =.. [PN|Vals], trie_lookup(PT, PK, _) -> true
               ;   PK =.. [PN|Vals], trie_insert(PT, PK, R),
                   append(Vals, [R], PArgs), PI =.. [PN|PArgs], assertz(M:PI),
                   count_up(Trig, PN)
               )),
        assertz(Trig:proj(Int, PN, Mask))
    ).

internal_atom(Trig, A, R, AI) :-
    functor(A, N, Ar), Trig:int(N, Ar, Int),
    A =.. [_|Args], append(Args, [R], Args1), AI =.. [Int|Args1].

round_test(old, R, K, R < K).
round_test(all, R, K, R =< K).
round_test(any, _, _, true).

none_key(none-_).
in_vars(Vs, V) :- memberchk_eq(V, Vs).
memberchk_eq(X, [Y|Ys]) :- ( X == Y -> true ; memberchk_eq(X, Ys) ).
selectchk_eq(X, [Y|Ys], Rest) :- ( X == Y -> Rest = Ys ; Rest = [Y|R1], selectchk_eq(X, Ys, R1) ).

%!  read_rules(+File, -Rules:list) is det.
%
%   Read a rules file into rule(Head, Body) terms. Every file is untrusted (a dataset folder
%   comes from the user too): it is read through rudas_datalog:read_datalog_file/3, which
%   throws `rudas_file_error(File, Line, Message)` for a term that is not a datalog rule.
read_rules(File, Rules) :-
    read_datalog_file(File, rules, Terms),
    maplist(rule_term, Rules, Terms).

%!  read_facts(+File, -Facts:list) is det.
%
%   Read a facts file (ground atoms over constants; checked as read_rules/2 does).
read_facts(File, Facts) :-
    read_datalog_file(File, facts, Facts).

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
