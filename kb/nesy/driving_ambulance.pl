% miniBOIA-like driving, out-of-distribution knowledge (ProbLog twin of
% kb/shortcuts/driving_ambulance.lp, rsbench's ambulance rules): only an obstacle ahead stops
% the ambulance; it turns onto a lane that exists, is not marked absent and holds no obstacle.
on(T) :- c(T, 1).
obstacle :- on(car).  obstacle :- on(person).  obstacle :- on(rider).  obstacle :- on(other_obstacle).
y(stop, 1) :- obstacle.
y(stop, 0) :- \+ obstacle.
y(forward, 0) :- obstacle.
y(forward, 1) :- \+ obstacle.
can(left) :- on(left_lane).
cannot(left) :- on(no_left_lane).  cannot(left) :- on(left_obstacle).
can(right) :- on(right_lane).
cannot(right) :- on(no_right_lane).  cannot(right) :- on(right_obstacle).
side(left).  side(right).
y(D, 1) :- side(D), can(D), \+ cannot(D).
y(D, 0) :- side(D), \+ y(D, 1).
