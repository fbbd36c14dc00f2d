"""The local layer: workflows as resource requirement graphs, split into parallel units matched to node classes.

Pipeline (pure up to the submission)::

    wf = load_workflow("render.yaml")          # spec: validated YAML, FILE:LINE: field.path errors
    plan = plan_workflow(wf, site, state)      # graph -> units (levels, chains merged, arrays packed,
                                               # CPM slack) -> matches (greedy CSP by slack) -> sbatch requests
    submit_plan(plan, client, state_dir)       # arrays + --dependency=afterok, SiteFactor levels (submit.py)

The simulator side (task-level DAG workloads, the policies monolithic / naive / critical-path / rrg, ``hetsched
dag eval``) lives in :mod:`slurm_plugin.dag.sim`, one layer up (it runs the simulator).
"""

from .._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".spec": ["Task", "Workflow", "WorkflowError", "parse_workflow"],
    ".files": ["load_workflow"],
    ".graph": ["build_graph", "levels", "schedule_times"],
    ".units": ["Unit", "decompose"],
    ".match": ["Match", "match_units", "rematch"],
    ".plan": ["WorkflowPlan", "plan_workflow"],
})
