"""The step of the top-layer RK4 flows (li2.prop3, li2.prop4): ``dt = step_safety /
lambda_max`` (:func:`numerics.li2.top_layer_flow.stable_step`)."""
from verify.bounds import interval

#: Where ``step_safety`` may lie: up to 1 every mode of RK4 decays monotonically (its
#: stability function decreases on [0, 1.59]); 0 is no step at all.
STEP_SAFETY = interval(0, 1, "(]", "dt = step_safety / lambda_max: every mode of RK4 decays "
                                   "monotonically only up to 1")
