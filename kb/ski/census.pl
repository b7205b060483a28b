% Census Income: the custom rules of the SKI-robustness experiments, thresholds transcribed.
% A one-hot column compared with `> 0` is hot/2, with `< 0` its negation; a non-negative
% count compared with `< 0` (never true as written) is read as `=< 0` (le/3), the evident
% intent of a split at 0.5.
class(X, le50k) :-
    gt(X, education_num, 12), \+ hot(X, marital_status_married_civ_spouse),
    le(X, capital_gain, 0).
class(X, gt50k) :-
    gt(X, education_num, 12), \+ hot(X, marital_status_married_civ_spouse),
    gt(X, capital_gain, 0).
class(X, gt50k) :-
    gt(X, education_num, 12), hot(X, marital_status_married_civ_spouse),
    gt(X, hours_per_week, 31).
class(X, le50k) :-
    lt(X, education_num, 12), le(X, capital_gain, 0),
    \+ hot(X, occupation_exec_managerial).
class(X, le50k) :-
    lt(X, education_num, 12), le(X, capital_gain, 0), hot(X, occupation_exec_managerial),
    \+ hot(X, marital_status_married_civ_spouse).
class(X, le50k) :-
    lt(X, education_num, 12), le(X, capital_gain, 0), hot(X, occupation_exec_managerial),
    hot(X, marital_status_married_civ_spouse), lt(X, age, 35).
class(X, le50k) :-
    lt(X, education_num, 12), gt(X, capital_gain, 0),
    hot(X, marital_status_married_civ_spouse), lt(X, education_num, 7).
class(X, le50k) :-
    lt(X, education_num, 12), gt(X, capital_gain, 0),
    \+ hot(X, marital_status_married_civ_spouse), lt(X, education_num, 10).
class(X, gt50k) :-
    lt(X, education_num, 12), gt(X, capital_gain, 0),
    \+ hot(X, marital_status_married_civ_spouse), gt(X, education_num, 10).
class(X, gt50k) :-
    lt(X, education_num, 12), gt(X, capital_gain, 0), gt(X, education_num, 7),
    gt(X, hours_per_week, 33).
class(X, le50k) :-
    gt(X, education_num, 12), lt(X, hours_per_week, 31), le(X, capital_gain, 0).
class(X, gt50k) :-
    gt(X, education_num, 12), lt(X, hours_per_week, 31), gt(X, capital_gain, 0).
class(X, le50k) :-
    le(X, capital_gain, 0), hot(X, occupation_exec_managerial), gt(X, age, 35),
    lt(X, education_num, 7).
class(X, le50k) :-
    le(X, capital_gain, 0), hot(X, occupation_exec_managerial), gt(X, age, 35),
    lt(X, hours_per_week, 34).
class(X, gt50k) :-
    le(X, capital_gain, 0), hot(X, occupation_exec_managerial), gt(X, age, 35),
    gt(X, hours_per_week, 34).
class(X, gt50k) :-
    lt(X, hours_per_week, 33), lt(X, age, 35).
class(X, le50k) :-
    gt(X, age, 35).
