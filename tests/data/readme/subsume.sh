#!/bin/sh
# A rule learner in eight lines: q(X,Y) :- p(X,Y) (or p(Y,X)) when it explains most p facts.
# $1: the training facts, one p(c1,c2). per line; prints the clauses on standard output.
awk -F'[(,).]' '{ f[$1 "," $2 "," $3] = 1; n[$1]++; a[$1, n[$1]] = $2 "," $3; b[$1, n[$1]] = $3 "," $2 }
END { for (p in n) for (q in n) if (p != q && n[p] >= 3) {
        s = 0; t = 0; for (i = 1; i <= n[p]; i++) { s += (q "," a[p, i]) in f; t += (q "," b[p, i]) in f }
        if (s >= 0.6 * n[p]) printf "%% confidence %.2f\n%s(X,Y) :- %s(X,Y).\n", s / n[p], q, p
        if (t >= 0.6 * n[p]) printf "%% confidence %.2f\n%s(X,Y) :- %s(Y,X).\n", t / n[p], q, p } }' "$1"
