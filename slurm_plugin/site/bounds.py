"""Upper bounds of a site description, within what Slurm stores (uint16 CPUs and timeouts, NO_VAL16 = 0xfffe)
and what one site file may describe; the workload readers hold traces to the same machine sizes. Plain
constants (no pydantic), so readers can import them cheaply."""

MAX_NODES_PER_GROUP = 65_536
MAX_NODES = 100_000  # per site
MAX_CPUS_PER_NODE = 0xFFFD  # Slurm's CPUs= is a uint16
MAX_MEMORY_GB = 1_048_576  # 1 PiB per node
MAX_DEVICES_PER_NODE = 64  # GPUs, or accelerators of one kind
UINT16_MAX = 0xFFFD  # largest value of Slurm's uint16 settings (timeouts, rates, PriorityTier)
SECONDS_MAX = 86_400 * 365  # a boot/shutdown time or SuspendTime
# the CPU architectures a site may describe (node features, job constraints): the one definition
ARCHES: tuple[str, ...] = ("aarch64", "x86_64", "riscv64")
