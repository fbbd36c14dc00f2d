"""Cost and performance of the pool: the hourly capacity plan and its Pareto front (plan, pareto), cost per
account/partition/class (report), and the scenario comparisons (compare, offpeak, throughput).

Each module is imported on its own; this package imports nothing so ``hetsched cost ...`` stays cheap to start.
"""
