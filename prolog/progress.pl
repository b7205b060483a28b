:- module(nesy_progress,
          [ progress/3,              % +Phase, +Done, +Total
            progress_enabled/0
          ]).
/** <module> Progress reports from long Prolog work to a Python progress bar

The Python side (nesybench.logic.prolog.progress/1, a context manager) turns reporting on
with the global flag `nesy_progress` (1 = on) and draws a tqdm bar on stderr from the
reports. Outside it (plain `swipl`, or a Python call without a bar) progress/3 is a no-op
that costs one flag read, so callers may report freely; reports never change a result.
*/

%!  progress_enabled is semidet.
%
%   True while a Python progress hook is listening.
progress_enabled :- flag(nesy_progress, 1, 1).

%!  progress(+Phase:atom, +Done:integer, +Total) is det.
%
%   Report that Phase has Done units of work behind it; Total is an integer (a determinate
%   bar) or `none` (a counter with elapsed time). An exception raised by the Python hook is
%   ignored (a broken bar must not stop the work); signals (Ctrl-C) pass through.
progress(Phase, Done, Total) :-
    (   progress_enabled
    ->  catch(py_call('nesybench.logic.prolog':'_progress_event'(Phase, Done, Total)),
              E, ( E = python_error(_, _) -> true ; throw(E) ))
    ;   true
    ).
