# Two entry points: `make demo` and `make test`. Both install what they need first (as root, Debian 12/13).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
DEMO_ROOT ?= /var/lib/hetsched/cluster

.PHONY: install deps demo test test-unit test-system clean-cluster

deps:
	$(PYTHON) -c "import sys; assert sys.version_info >= (3, 11), 'Python >= 3.11 needed'"
	@if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v lua5.1 >/dev/null \
	    || ! ls /usr/lib/*/lua/5.1/cjson.so >/dev/null 2>&1 || ! ls /usr/lib/*/lua/5.1/posix.so >/dev/null 2>&1 \
	    || ! command -v ipmitool >/dev/null \
	    || ! command -v ipmi_sim >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    slurmctld slurmd slurm-client munge lua-socket lua-cjson lua-posix lua5.1 ipmitool openipmi >/dev/null; fi

install: deps
	$(PIP) install -q -e '.[test]'

demo: install
	hetsched cluster up demo --root $(DEMO_ROOT) --job-submit
	hetsched cluster demo --root $(DEMO_ROOT)

test: install
	$(PYTHON) -m pytest tests

test-unit: install
	$(PYTHON) -m pytest tests/unit tests/integration

clean-cluster:
	hetsched cluster down --root $(DEMO_ROOT)
