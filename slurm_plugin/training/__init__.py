"""Training and evaluating the learned (DQN) ranking in the simulator: above ``sim`` in the layers, since it
runs the engine; ``rank.dqn`` (features, model, inference) stays below and never imports the simulator.

- :mod:`.episodes`: play recorded trace sequences through the engine, collect transitions;
- :mod:`.train`: Double DQN training (needs torch: the ``train`` extra), exports numpy weights;
- :mod:`.evaluate`: compare rankings on held-out sequences the way RLScheduler reports them.
"""
