"""The twin: choose and tune a site's policies by replaying its own history in the simulator.

``split`` cuts a history into the part the tuner may look at and the held-back part it is judged on;
the candidate sweeps (ranking, power, packing) and the policy-file writer build on it. The tuner imports the
simulator; nothing below ``tune`` imports it (layers: sim < tune < cycle/daemon/cli).
"""
