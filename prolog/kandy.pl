:- module(kandy,
          [ load_task_rule/3,       % +Module, +File, -Preds
            check_samples/3,        % +Module, +Texts, -Flags
            task_valid/2            % +RuleFile, +Sample
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
%   `kandy_rule_error(Outcome)` on a syntax error, a directive, or an unsafe call.
load_task_rule(Module, File, Preds) :-
    load_rules_file(Module, File, [kandy_bk], Outcome),
    (   Outcome = ok(Preds) -> true ; throw(kandy_rule_error(Outcome)) ).

%!  check_samples(+Module:atom, +Texts:list, -Flags:list) is det.
%
%   Flags holds 1 for every sample text (natural encoding) that satisfies Module:valid/1
%   and 0 otherwise, in order: one call checks a whole batch.
check_samples(Module, Texts, Flags) :-
    inference_limit(Limit),
    foldl(check_one(Module, Limit), Texts, Flags, 0, _).

check_one(Module, Limit, Text, Flag, I0, I) :-
    I is I0 + 1,
    term_string(Sample, Text),
    catch(call_with_inference_limit(Module:valid(Sample), Limit, Result),
          Error, throw(kandy_check_error(I0, Text, Error))),
    (   Result == inference_limit_exceeded
    ->  throw(kandy_check_error(I0, Text, inference_limit_exceeded(Limit)))
    ;   Flag = 1
    ),
    !.
check_one(_, _, _, 0, I0, I) :-
    I is I0 + 1.

%!  task_valid(+RuleFile, +Sample) is semidet.
%
%   True when Sample satisfies the rule in RuleFile (loaded once per file).
task_valid(File, Sample) :-
    absolute_file_name(File, Abs, [access(read)]),
    variant_sha1(Abs, Hash),
    atom_concat(kandy_rule_, Hash, Module),
    (   current_predicate(Module:valid/1)
    ->  true
    ;   load_task_rule(Module, Abs, _)
    ),
    once(Module:valid(Sample)).
