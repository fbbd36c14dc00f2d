"""Node health: the fault signature library (data files under ``signatures/``), its validator, and the health
check Slurm runs as ``HealthCheckProgram`` (snapshot of the node's logs/tools/BMC -> pure decision -> applier)."""
