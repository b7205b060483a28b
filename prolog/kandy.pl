:- module(kandy,
          [ load_task_rule/3,       % +Module, +File, -Preds
            check_samples/3,        % +Module, +Texts, -Flags
            check_sample_data/3,    % +Module, +Samples, -Flags
            task_valid/2,           % +RuleFile, +Sample
            check_error_text/2      % +Error, -Message
          ]).
/** <module> KANDY ground-truth checks

A task's ground-truth / rejection rule is a set of clauses defining `valid/1` over a sample in
the natural encoding (see kb/kandy/bk.pl). Rules are untrusted text: they are loaded with
safe_load (line-accurate syntax errors, sandbox) into a module of their own that sees the
background knowledge.

From SWI-Prolog:
==
?- use_module(prolog/kandy).
?- task_valid('kb/kandy/rules/easy/t15.pl',
              side_by_side([stack([triangle_red_small, square_blue_small]), circle_red_large])).
true.
==
*/
:- use_module(safe_load).
:- use_module(library(apply)).
:- use_module(library(lists)).
:- use_module('../kb/kandy/bk', []).

%   A rule that loops or explodes is a bug in the rule: stop it and say which sample.
inference_limit(10 000 000).

%!  load_task_rule(+Module:atom, +File, -Preds:list) is det.
%
%   Load the rule in File into Module (importing kandy_bk). Throws
%   `kandy_rule_error(File, Outcome)` on a syntax error, a directive, or an unsafe call
%   (printed by print_message/2 as `File:Line: ...`).
load_task_rule(Module, File, Preds) :-
    load_rules_file(Module, File, [kandy_bk], Outcome),
    (   Outcome = ok(Preds)
    ->  true
    ;   throw(kandy_rule_error(File, Outcome))
    ).

%!  check_samples(+Module:atom, +Texts:list, -Flags:list) is det.
%
%   Flags holds 1 for every sample text (natural encoding) that satisfies Module:valid/1
%   and 0 otherwise, in order: one call checks a whole batch.
%   Each sample runs under the bounds of safe_load:bounded_once/4 (inference_limit/1 and a
%   wall-clock limit of time_limit/1 seconds), through safe_load:bounded_maplist/6; a rule
%   that hits a limit or raises an error raises kandy_check_error/3 for that sample.
check_samples(Module, Texts, Flags) :-
    maplist(text_sample, Texts, Samples),
    check_terms(Module, Samples, Texts, Flags).

%!  check_sample_data(+Module:atom, +Samples:list, -Flags:list) is det.
%
%   As check_samples/3 for samples given as data instead of text, so that nothing is
%   parsed: an atomic shape is its name (`triangle_red_small`, an atom or a string) and a
%   composition is `Op-Children` (`Op` an atom or string, `Children` a list of samples), which
%   is what janus makes of a Python `("stack", [...])`. An error names the sample in the
%   natural encoding.
check_sample_data(Module, Data, Flags) :-
    maplist(data_sample, Data, Samples),
    check_terms(Module, Samples, _, Flags).

check_terms(Module, Samples, Texts, Flags) :-
    inference_limit(Limit),
    time_limit(Seconds),
    bounded_maplist(valid_in(Module), Samples, Flags0, Limit, Seconds, Outcome),
    (   Outcome = stopped(I, Status)
    ->  sample_text(I, Samples, Texts, Text),
        check_failure(Status, Limit, Seconds, Error),
        throw(kandy_check_error(I, Text, Error))
    ;   Flags = Flags0
    ).

sample_text(I, _, Texts, Text) :-
    nonvar(Texts),
    !,
    nth0(I, Texts, Text).
sample_text(I, Samples, _, Text) :-
    nth0(I, Samples, Sample),
    with_output_to(string(Text),
                   write_term(Sample, [quoted(true), spacing(next_argument)])).

data_sample(Op-Children, Sample) :-
    !,
    must_be(list, Children),
    data_name(Op, Name),
    maplist(data_sample, Children, Samples),
    Sample =.. [Name, Samples].
data_sample(Name, Atom) :-
    data_name(Name, Atom),
    !.
data_sample(Data, _) :-
    type_error(kandy_sample_data, Data).

data_name(Name, Name) :-
    atom(Name),
    !.
data_name(Text, Name) :-
    string(Text),
    atom_string(Name, Text).

valid_in(Module, Sample) :-
    Module:valid(Sample).

text_sample(Text, Sample) :-
    term_string(Sample, Text).

check_failure(error(Error), _, _, Error).
check_failure(inference_limit(_), Limit, _, inference_limit_exceeded(Limit)).
check_failure(time_limit(_), _, Seconds, time_limit_exceeded(Seconds)).

%   Wall-clock seconds one sample's check may take.
time_limit(10).

%!  task_valid(+RuleFile, +Sample) is semidet.
%
%   True when Sample satisfies the rule in RuleFile (loaded once per file).
%   The file is reloaded when its modification time changed since it was loaded, and the
%   check runs under the same inference and wall-clock limits as check_samples/3 (hitting one
%   throws kandy_check_error(0, Sample, Limit)).
task_valid(File, Sample) :-
    absolute_file_name(File, Abs, [access(read)]),
    variant_sha1(Abs, Hash),
    atom_concat(kandy_rule_, Hash, Module),
    time_file(Abs, Stamp),
    (   rule_loaded(Module, Stamp), current_predicate(Module:valid/1)
    ->  true
    ;   retractall(rule_loaded(Module, _)),
        load_task_rule(Module, Abs, _),
        assertz(rule_loaded(Module, Stamp))
    ),
    inference_limit(Limit),
    time_limit(Seconds),
    bounded_once(Module:valid(Sample), Limit, Seconds, Status),
    (   Status == true
    ->  true
    ;   Status == false
    ->  fail
    ;   Status = error(Error)
    ->  throw(Error)
    ;   Status = inference_limit(_)
    ->  throw(kandy_check_error(0, Sample, inference_limit_exceeded(Limit)))
    ;   throw(kandy_check_error(0, Sample, time_limit_exceeded(Seconds)))
    ).

:- dynamic rule_loaded/2.              % rule_loaded(Module, FileTimeStamp)

:- multifile prolog:message//1.

prolog:message(kandy_rule_error(File, Outcome)) -->
    kandy_outcome_message(Outcome, File).
prolog:message(kandy_check_error(I, Sample, Error)) -->
    [ 'KANDY rule: sample ~w (~p): '-[I, Sample] ],
    kandy_error_detail(Error).

kandy_outcome_message(syntax_error(Line, Msg), File) --> !,
    [ '~w:~w: ~w'-[File, Line, Msg] ].
kandy_outcome_message(directive(Line), File) --> !,
    [ '~w:~w: directives (:- ...) are not allowed in rules'-[File, Line] ].
kandy_outcome_message(unsafe(Line, Msg), File) --> !,
    [ '~w:~w: unsafe rule: ~w'-[File, Line, Msg] ].
kandy_outcome_message(bad_clause(Line, Msg), File) --> !,
    [ '~w:~w: bad clause: ~w'-[File, Line, Msg] ].
kandy_outcome_message(too_big(Line, Msg), File) --> !,
    [ '~w:~w: ~w'-[File, Line, Msg] ].
kandy_outcome_message(no_file(_), File) --> !,
    [ '~w: rule file not found'-[File] ].
kandy_outcome_message(Other, File) -->
    [ '~w: KANDY rule could not be loaded: ~p'-[File, Other] ].

kandy_error_detail(E) -->
    { check_error_text(E, Msg) },
    [ '~w'-[Msg] ].

%!  check_error_text(+Error, -Message:string) is det.
%
%   The third argument of kandy_check_error/3 as one line (limits, memory, exceptions).
check_error_text(inference_limit_exceeded(L), Msg) :- !,
    status_message(inference_limit(L), Msg).
check_error_text(time_limit_exceeded(S), Msg) :- !,
    status_message(time_limit(S), Msg).
check_error_text(E, Msg) :-
    error_message(E, Msg).
