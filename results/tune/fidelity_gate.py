"""The fidelity gate's figures on every shared trace (issue 22 item 4): replay each trace under what the site
may have run (FCFS and multifactor, EASY backfill on, then off) and compare with the recorded waits.
Usage: python3 results/tune/fidelity_gate.py OUT.json TRACE[@SITE]... (under `nice -n 15`)."""

import json
import sys
import time

from slurm_plugin.sim.run import prepare, provenance
from slurm_plugin.tune.fidelity_gate import check_history, history_kind, site_rankings


def main(out: str, specs: list[str]) -> None:
    rows = []
    for spec in specs:
        path, _, site = spec.partition("@")
        t0 = time.process_time()
        p = prepare(path, site or None, drop_unfit=True)
        for bf in (True, False):
            c = check_history(p, site_rankings(history_kind(path)), bf)
            rows.append({"trace": path, "cpu_s": round(time.process_time() - t0, 1), **c.as_dict()})
            print(f"{path} backfill {'on' if bf else 'off'}: {c.reason}", flush=True)
        with open(out, "w") as f:
            json.dump({"rows": rows, "provenance": provenance()}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
