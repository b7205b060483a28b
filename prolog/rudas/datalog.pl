:- module(rudas_datalog,
          [ read_datalog_file/3,        % +Source, +Kind, -Terms
            source_stream/2,            % +Source, -Stream
            source_label/2,             % +Source, -Label
            source_text/2,              % +Source, -String
            datalog_rule_problem/2,     % +Clause, -Why
            range_problem/2,            % +Clause, -Why
            datalog_fact_problem/2      % +Fact, -Why
          ]).
/** <module> The datalog check shared by every RuDaS entry point

Rule and fact files handed to `rudas chase` and `rudas evaluate` (a dataset's rules.txt,
eval-support.txt and train.txt, a learned program) are untrusted text. The forward chainer
terminates only on datalog: a head with a function term (`p(f(X), Y) :- p(X, Y).`) derives
facts without end, and a head variable that no body literal binds derives non-ground facts.
Every file is therefore read through read_datalog_file/3, which reads each term under the
size and depth limits of safe_load:read_untrusted_term/4 and checks it with the predicates
below; the learned-rule reader of rudas_metrics uses the same checks.

A *source* is either the text of a file, `_{label: Label, text: Text}` (what Python hands
over: it reads every file of a user through nesybench's door, so Prolog opens no path from
outside: no FIFO, device, link out or file without bound), or a file name (kept for the
files nesybench ships and for use from Prolog). Errors name the label.
*/
:- use_module('../safe_load', [read_untrusted_term/4]).
:- use_module(messages, []).          % how rudas_file_error/3 prints
:- use_module(library(lists)).

%!  source_stream(+Source, -Stream) is det.
%
%   A stream reading Source: the text of `_{label:, text:}`, or the file Source names.
source_stream(Source, S) :-
    is_dict(Source), !,
    get_dict(text, Source, Text),
    open_string(Text, S).
source_stream(File, S) :-
    open(File, read, S).

%!  source_label(+Source, -Label) is det.
%
%   What errors call Source: its `label`, or the file name.
source_label(Source, Label) :-
    is_dict(Source), !,
    get_dict(label, Source, Label).
source_label(File, File).

%!  source_text(+Source, -String) is det.
%
%   The whole text of Source.
source_text(Source, String) :-
    is_dict(Source), !,
    get_dict(text, Source, Text),
    atom_string(Text, String).
source_text(File, String) :-
    read_file_to_string(File, String, []).

%!  read_datalog_file(+Source, +Kind, -Terms:list) is det.
%
%   Read every term of Source (a file's text `_{label:, text:}` or a file name; Kind
%   `rules`: datalog rules `Head :- Body` or facts; Kind `facts`: ground facts). Throws
%   `rudas_file_error(Label, Line, Message)` on a syntax error, a term over the limits, or a
%   term that is not datalog.
read_datalog_file(Source, Kind, Terms) :-
    source_label(Source, File),
    catch(setup_call_cleanup(source_stream(Source, S),
                             read_checked(S, Kind, Terms),
                             close(S)),
          Error,
          file_error(Error, File)).

file_error(datalog_error(Line, Msg), File) :- !,
    throw(rudas_file_error(File, Line, Msg)).
file_error(untrusted_term_error(Line, Msg), File) :- !,
    throw(rudas_file_error(File, Line, Msg)).
file_error(error(syntax_error(What), Ctx), File) :- !,
    ( ( Ctx = stream(_, Line, _, _) ; Ctx = file(_, Line, _, _) ) -> true ; Line = 0 ),
    format(string(Msg), "syntax error: ~w", [What]),
    throw(rudas_file_error(File, Line, Msg)).
file_error(error(existence_error(source_sink, _), _), File) :- !,
    throw(rudas_file_error(File, 0, "file not found")).
file_error(Error, _) :-
    throw(Error).

read_checked(S, Kind, Terms) :-
    read_untrusted_term(S, T, Line, [module(rudas_datalog)]),
    (   T == end_of_file
    ->  Terms = []
    ;   (   term_problem(Kind, T, Why)
        ->  throw(datalog_error(Line, Why))
        ;   Terms = [T|Ts],
            read_checked(S, Kind, Ts)
        )
    ).

term_problem(rules, T, Why) :-
    (   datalog_rule_problem(T, Why) -> true ; range_problem(T, Why) ).
term_problem(facts, T, Why) :-
    datalog_fact_problem(T, Why).

%!  datalog_rule_problem(+Clause, -Why:string) is semidet.
%
%   True (with the reason) when Clause is not a datalog rule or fact: a directive, a head or
%   body literal that is not an atom, negation, disjunction or another control construct in
%   a body, or a function term as an argument of any literal.
datalog_rule_problem(T, Why) :-
    (   var(T)
    ->  Why = "a rule must be an atom or Head :- Body"
    ;   T = (:- _)
    ->  Why = "directives (:- ...) are not allowed in a rules file"
    ;   T = (H :- B)
    ->  body_literals(B, Ls, Why1),
        (   literal_problem(head, H, Why0)
        ->  Why = Why0
        ;   nonvar(Why1)
        ->  Why = Why1
        ;   member(L, Ls), literal_problem(body, L, Why2)
        ->  Why = Why2
        )
    ;   literal_problem(head, T, Why)
    ).

literal_problem(head, H, "a rule head must be an atom") :-
    \+ callable(H), !.
literal_problem(body, L, "body literals must be atoms") :-
    \+ callable(L), !.
literal_problem(body, L, "negation is not supported (datalog rules only)") :-
    L = (\+ _), !.
literal_problem(_, L, "function terms are not allowed (datalog)") :-
    compound(L),
    arg(_, L, A),
    compound(A), !.

%   body_literals(+Body, -Literals, -Why): Why stays unbound for a plain conjunction.
body_literals(B, [B], "body literals must be atoms") :- var(B), !.
body_literals((A, B), Ls, Why) :- !,
    body_literals(A, L1, W1),
    (   nonvar(W1) -> Why = W1, Ls = L1
    ;   body_literals(B, L2, Why), append(L1, L2, Ls)
    ).
body_literals(B, [B], "disjunction, if-then-else and cuts are not datalog") :-
    control(B), !.
body_literals(B, [B], _).

control((_ ; _)).
control((_ -> _)).
control((_ *-> _)).
control(!).

%!  range_problem(+Clause, -Why:string) is semidet.
%
%   True when a variable of the head of Clause does not occur in its body (the chase would
%   derive non-ground facts).
range_problem(T, Why) :-
    (   T = (H :- B) -> true ; H = T, B = true ),
    term_variables(H, HVs),
    term_variables(B, BVs),
    member(V, HVs),
    \+ ( member(W, BVs), W == V ),
    !,
    Why = "unsafe rule: a head variable does not occur in the body".

%!  datalog_fact_problem(+Fact, -Why:string) is semidet.
%
%   True when Fact is not a ground atom whose arguments are constants.
datalog_fact_problem(F, Why) :-
    (   \+ callable(F)
    ->  Why = "a fact must be an atom"
    ;   F = (_ :- _)
    ->  Why = "a facts file holds facts, not rules"
    ;   \+ ground(F)
    ->  Why = "a fact must be ground (no variables)"
    ;   arg(_, F, A), compound(A)
    ->  Why = "function terms are not allowed (datalog)"
    ).
