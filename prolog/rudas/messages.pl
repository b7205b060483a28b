:- module(rudas_messages, []).
/** <module> How RuDaS errors print

Every error term the RuDaS modules throw has a prolog:message//1 rule here, so that
print_message/2 (the top level, an uncaught error in a script) prints one line instead of
`Unknown message`. A term that names a file prints as `File:Line: message` (`File: message`
when the line is unknown, 0).

| term                                        | thrown by                                   |
|---------------------------------------------|---------------------------------------------|
| rudas_file_error(File, Line, Message)       | a rule or fact file that is not datalog     |
| rudas_input_error(File, Kind, Line, Message)| a learned-rules file rudas_evaluate/3 reads |
| rudas_error(Message)                        | generator parameters that cannot be met     |
| rudas_dir_error(Dir, Why)                   | an output folder that cannot be created     |
| rudas_budget(Status, Derived)               | chase/4 when a budget stops it              |
| rudas_budget_facts, rudas_retry,            | internal: caught inside chase/5, the        |
| datalog_error(Line, Why)                    | generator and read_datalog_file/3           |
*/

:- multifile prolog:message//1.

prolog:message(rudas_file_error(File, Line, Message)) -->
    file_line(File, Line),
    [ '~w'-[Message] ].
prolog:message(rudas_input_error(File, _Kind, Line, Message)) -->
    file_line(File, Line),
    [ 'learned rules: ~w'-[Message] ].
prolog:message(rudas_error(Message)) -->
    [ 'RuDaS: ~w'-[Message] ].
prolog:message(rudas_dir_error(Dir, Why)) -->
    [ '~w: cannot create the folder: ~w'-[Dir, Why] ].
prolog:message(rudas_budget(Status, Derived)) -->
    { budget_name(Status, Name),
      length(Derived, N) },
    [ 'RuDaS chase stopped by its ~w budget after deriving ~D fact(s) (chase/5 returns them \c
       with the status instead)'-[Name, N] ].
prolog:message(rudas_budget_facts) -->
    [ 'RuDaS chase stopped by its max_derived budget' ].
prolog:message(rudas_retry) -->
    [ 'RuDaS: the generator could not complete a draw (rudas_retry escaped: a bug)' ].
prolog:message(datalog_error(Line, Why)) -->
    [ 'line ~w: ~w'-[Line, Why] ].

file_line(File, Line) -->
    (   { integer(Line), Line > 0 }
    ->  [ '~w:~w: '-[File, Line] ]
    ;   [ '~w: '-[File] ]
    ).

budget_name(budget(facts), max_derived) :- !.
budget_name(budget(time), time_limit) :- !.
budget_name(Status, Status).
