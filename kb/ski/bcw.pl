% Breast Cancer Wisconsin: the custom rules of the SKI-robustness experiments, thresholds
% transcribed (features on their 1..10 scale; bare_nuclei 0 = missing). The experiments'
% `Feature < 0` on a non-negative feature never holds; it is read as `=< 0` (le/3), the
% evident intent of a split at 0.5. Literals such as lt(X, normal_nucleoli, 1) cannot hold
% on the 1..10 scale either: they are kept as written, which disables their rules.
class(X, benign) :-
    lt(X, uniformity_cell_size, 3), gt(X, normal_nucleoli, 2), lt(X, bare_nuclei, 1).
class(X, malignant) :-
    lt(X, uniformity_cell_size, 3), gt(X, normal_nucleoli, 2), gt(X, bare_nuclei, 1).
class(X, benign) :-
    gt(X, uniformity_cell_size, 3), le(X, bare_nuclei, 0).
class(X, malignant) :-
    gt(X, uniformity_cell_size, 3), gt(X, bare_nuclei, 0), gt(X, bland_chromatin, 4).
class(X, malignant) :-
    gt(X, uniformity_cell_size, 3), gt(X, bare_nuclei, 0), lt(X, bland_chromatin, 4),
    lt(X, uniformity_cell_size, 4), lt(X, normal_nucleoli, 1).
class(X, benign) :-
    gt(X, uniformity_cell_size, 3), gt(X, bare_nuclei, 0), lt(X, bland_chromatin, 4),
    lt(X, uniformity_cell_size, 4), gt(X, normal_nucleoli, 1).
class(X, malignant) :-
    gt(X, uniformity_cell_size, 3), gt(X, bare_nuclei, 0), lt(X, bland_chromatin, 4),
    gt(X, uniformity_cell_size, 4), gt(X, marginal_adhesion, 1).
class(X, malignant) :-
    gt(X, uniformity_cell_size, 3), gt(X, bare_nuclei, 0), lt(X, bland_chromatin, 4),
    gt(X, uniformity_cell_size, 4), lt(X, marginal_adhesion, 1), lt(X, normal_nucleoli, 3).
class(X, benign) :-
    gt(X, uniformity_cell_size, 3), gt(X, bare_nuclei, 0), lt(X, bland_chromatin, 4),
    gt(X, uniformity_cell_size, 4), lt(X, marginal_adhesion, 1), gt(X, normal_nucleoli, 3).
class(X, benign) :-
    lt(X, normal_nucleoli, 2), lt(X, bare_nuclei, 4).
class(X, malignant) :-
    gt(X, bare_nuclei, 4), lt(X, single_epithelial_cell_size, 1).
class(X, benign) :-
    gt(X, single_epithelial_cell_size, 1).
