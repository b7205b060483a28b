:- module(rudas,
          [ rudas_generate/3,        % +OutDir, +Params:dict, -Summary:dict
            rudas_chase/2,           % +DatasetDir, -Derived:list
            rudas_chase/3,           % +RulesFile, +FactsFile, -Derived:list
            rudas_evaluate/3,        % +DatasetDir, +LearnedFile, -Metrics:dict
            chase_strings/6,         % +RulesFile, +FactsFile, +MaxDerived, +TimeLimit, -Facts, -Status
            chase_strings/8,         % +RulesFile, +FactsFile, +MaxDerived, +TimeLimit, +Plan, +MinWork, -Facts, -Status
            rule_distance_text/3,    % +Rule1:text, +Rule2:text, -D
            rule_distance_text/4,    % +Method, +Rule1:text, +Rule2:text, -D
            r_score_text/3           % +Original:list(text), +Learned:list(text), -Score
          ]).
/** <module> RuDaS from the SWI-Prolog top level

==
$ swipl prolog/rudas/rudas.pl
?- rudas_generate('/tmp/ds', _{category:rdg, size:s, depth:2, seed:1}, S).
?- rudas_chase('/tmp/ds', Derived), length(Derived, N).     % I(R, S') from eval-support.txt
?- rudas_evaluate('/tmp/ds', 'learned.pl', M), M.h_score = H.
==
*/
:- use_module(chase).
:- use_module(generate).
:- use_module(metrics).
:- use_module(messages, []).          % how the RuDaS error terms print

%!  rudas_generate(+OutDir, +Params:dict, -Summary:dict) is det.
%
%   Generate a dataset into OutDir, created with any missing parent folders. A folder that
%   cannot be created throws rudas_dir_error(Folder, Why) naming that folder (the first one
%   missing, or a file in the way). See rudas_generate:resolve_params/2 for Params.
rudas_generate(Dir, Params, Summary) :-
    resolve_params(Params, _),              % bad parameters: nothing is created
    ensure_directory(Dir),
    once(generate(Params, Dir, Summary)).

%!  ensure_directory(+Dir) is det.
%
%   Dir exists as a folder afterwards: its missing ancestors are created first, outermost
%   first. Throws rudas_dir_error(Folder, Why) for the one that cannot be created.
ensure_directory(Dir) :-
    exists_directory(Dir),
    !.
ensure_directory(Dir) :-
    exists_file(Dir),
    !,
    throw(rudas_dir_error(Dir, "a file of that name is in the way")).
ensure_directory(Dir) :-
    file_directory_name(Dir, Parent),
    (   Parent == Dir
    ->  true
    ;   ensure_directory(Parent)
    ),
    catch(make_directory(Dir), error(Formal, Context),
          dir_error(Dir, Formal, Context)).

dir_error(Dir, _, context(_, Why)) :-
    atomic(Why),
    !,
    throw(rudas_dir_error(Dir, Why)).
dir_error(Dir, Formal, _) :-
    format(string(Why), "~p", [Formal]),
    throw(rudas_dir_error(Dir, Why)).

%!  rudas_chase(+DatasetDir, -Derived:list) is det.
%
%   Forward-chain the dataset's rules.txt over its eval-support.txt.
rudas_chase(Dir, Derived) :-
    atomic_list_concat([Dir, '/rules.txt'], R),
    atomic_list_concat([Dir, '/eval-support.txt'], F),
    chase_files(R, F, Derived).

%!  rudas_chase(+RulesFile, +FactsFile, -Derived:list) is det.
rudas_chase(R, F, Derived) :- chase_files(R, F, Derived).

%!  rudas_evaluate(+DatasetDir, +LearnedFile, -Metrics:dict) is det.
rudas_evaluate(Dir, File, Metrics) :-
    evaluate(Dir, File, _{}, Metrics).

%!  chase_strings(+RulesFile, +FactsFile, +MaxDerived, +TimeLimit, -Facts:list(string), -Status:string) is det.
%
%   For Python: the derived facts as strings; MaxDerived/TimeLimit may be `none`.
chase_strings(RF, FF, MD, TL, Strings, Status) :-
    chase_strings(RF, FF, MD, TL, auto, none, Strings, Status).

%!  chase_strings(+RulesFile, +FactsFile, +MaxDerived, +TimeLimit, +Plan, +MinWork, -Facts, -Status) is det.
%
%   As chase_strings/6 with the join strategy Plan (auto, forward or backward) and
%   MinWork (`none` or the option backward_min_work; see rudas_chase:chase/5).
chase_strings(RF, FF, MD, TL, Plan, MinWork, Strings, Status) :-
    read_rules(RF, Rules), read_facts(FF, Facts),
    ( MD == none -> O1 = [] ; O1 = [max_derived(MD)] ),
    ( TL == none -> O2 = O1 ; O2 = [time_limit(TL)|O1] ),
    ( MinWork == none -> O3 = [plan(Plan)|O2] ; O3 = [plan(Plan), backward_min_work(MinWork)|O2] ),
    chase(Rules, Facts, Derived, St, O3),
    maplist(fact_string, Derived, Strings),
    term_string(St, Status).

fact_string(F, S) :- format(string(S), "~q", [F]).

text_rule(Text, Rule) :- term_string(T, Text), rule_term(Rule, T).

%!  rule_distance_text(+Rule1, +Rule2, -D) is det.
rule_distance_text(A, B, D) :-
    text_rule(A, R1), text_rule(B, R2), rule_distance(R1, R2, D).

%!  rule_distance_text(+Method, +Rule1, +Rule2, -D) is det.
%
%   Method `fast` (branch and bound + Hungarian, rule_distance/3) or `brute` (every
%   renaming x every permutation, rule_distance_brute/3: the test oracle).
rule_distance_text(fast, A, B, D) :- rule_distance_text(A, B, D).
rule_distance_text(brute, A, B, D) :-
    text_rule(A, R1), text_rule(B, R2), rule_distance_brute(R1, R2, D).

%!  r_score_text(+Original:list, +Learned:list, -Score) is det.
r_score_text(As, Bs, S) :-
    maplist(text_rule, As, Rs1), maplist(text_rule, Bs, Rs2), r_score(Rs1, Rs2, S).
