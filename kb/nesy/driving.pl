% miniBOIA-like driving (ProbLog twin of kb/shortcuts/driving.lp): 21 Boolean concepts,
% actions forward / stop / left / right.
on(T) :- c(T, 1).
obstacle :- on(car).  obstacle :- on(person).  obstacle :- on(rider).  obstacle :- on(other_obstacle).
stop :- on(red_light).  stop :- on(traffic_sign).  stop :- obstacle.
go :- on(green_light).  go :- on(follow).  go :- on(road_clear).
y(stop, 1) :- stop.
y(stop, 0) :- \+ stop.
y(forward, 1) :- go, \+ stop.
y(forward, 0) :- \+ y(forward, 1).
can(left) :- on(left_lane).  can(left) :- on(left_green_light).  can(left) :- on(left_follow).
cannot(left) :- on(no_left_lane).  cannot(left) :- on(left_obstacle).
cannot(left) :- on(left_solid_line).
can(right) :- on(right_lane).  can(right) :- on(right_green_light).  can(right) :- on(right_follow).
cannot(right) :- on(no_right_lane).  cannot(right) :- on(right_obstacle).
cannot(right) :- on(right_solid_line).
side(left).  side(right).
y(D, 1) :- side(D), can(D), \+ cannot(D).
y(D, 0) :- side(D), \+ y(D, 1).
