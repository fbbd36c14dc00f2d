# Two entry points on a fresh Debian 12/13, as root (a minbase system first needs `apt-get install -y make`):
#   make demo   bring up the 10-node demo cluster, submit a mix of sbatch jobs, show where they ran
#   make test   run every test (unit, integration, system tests against a real local Slurm); CI runs this
# Both first install what is missing: the Debian packages in APT_PACKAGES (apt-get, only the missing ones),
# then a virtual environment VENV made with PYTHON and this package in it (editable, with the test extra).
# Everything then runs from the venv: Debian's python3 has no pip and refuses system installs (PEP 668).
#
# The `train` extra (torch: training the ranking model and its test) is big. TRAIN=auto (default) installs it
# only when pip finds a torch wheel without any index, i.e. in its find-links (the CPU wheel in /opt/wheels on
# the CI machine); a fresh machine would otherwise download PyPI's multi-GB CUDA build, so there it is left
# out and tests/unit/rank/test_dqn_train.py skips with its reason. TRAIN=yes installs it from the index
# anyway, TRAIN=no never.
PYTHON ?= python3
VENV ?= .venv
TRAIN ?= auto
DEMO_ROOT ?= /var/lib/hetsched/cluster
APT_PACKAGES ?= python3 python3-venv ca-certificates slurmctld slurmd slurm-client munge lua-socket lua-cjson lua-posix \
                lua5.1 ipmitool openipmi runc umoci busybox-static
RELEASES ?= bookworm trixie
PY := $(VENV)/bin/python
# the venv's commands (hetsched, python, sushy-emulator) come first, as after `. .venv/bin/activate`
RUN := PATH="$(abspath $(VENV))/bin:$$PATH"
INSTALLED := $(VENV)/.hetsched-installed

.PHONY: deps install demo test test-deps test-unit fresh soak bench-scale clean-cluster containers-deps containers-up containers-down test-containers \
        vm-deps test-vm

deps:
	@missing=; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_FLAGS) $$missing >/dev/null; \
	fi

$(INSTALLED): pyproject.toml | deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@extras=test; case "$(TRAIN)" in \
	  yes) extras=test,train;; \
	  auto) if $(PY) -m pip install -q --no-index --no-deps torch >/dev/null 2>&1; then extras=test,train; \
	        else echo "no local torch wheel: the train extra is left out (TRAIN=yes installs it from the index)"; fi;; \
	esac; \
	echo "$(PY) -m pip install -e '.[$$extras]'"; \
	$(PY) -m pip install --progress-bar off -e ".[$$extras]"
	touch $@

# Bash completion and man pages, generated from the click commands (`hetsched completion bash`, `hetsched man`).
COMPLETION_DIR ?= /etc/bash_completion.d
MAN_DIR ?= /usr/local/share/man/man1

install: deps $(INSTALLED)
	@mkdir -p $(COMPLETION_DIR) $(MAN_DIR)
	$(RUN) hetsched completion bash > $(COMPLETION_DIR)/hetsched.tmp && mv $(COMPLETION_DIR)/hetsched.tmp $(COMPLETION_DIR)/hetsched
	$(RUN) hetsched man $(MAN_DIR) >/dev/null

demo: install
	$(RUN) hetsched cluster up demo --root $(DEMO_ROOT) --job-submit
	$(RUN) hetsched cluster demo --root $(DEMO_ROOT)

# The real-Prometheus system test's server (tests/system/test_metrics_live.py): Debian's prometheus, ~19 MB
# without its recommends; the test runs its own server on a test port (the package's service may also start).
test-deps: install
	@$(MAKE) --no-print-directory deps APT_PACKAGES="prometheus" APT_FLAGS=--no-install-recommends

test: test-deps
	$(RUN) python -m pytest tests

test-unit: install
	$(RUN) python -m pytest tests/unit tests/integration

# Not part of `make test`: both commands on fresh minbase containers of each release (tests/fresh/run.sh).
fresh:
	rc=0; for r in $(RELEASES); do tests/fresh/run.sh $$r || rc=1; done; exit $$rc

# Not part of `make test` either: the suite on a real local cluster under steady submissions, with slurmctld and
# daemon restarts and a failing node, for SOAK_S seconds (tests/soak/run.py); the report goes to results/soak/.
SOAK_S ?= 1800
soak: install
	$(RUN) python -m tests.soak.run --duration $(SOAK_S) --out results/soak/soak-$$(date -u +%Y%m%dT%H%M%SZ).json

# Not part of `make test` either (tens of minutes): the large live site of issue 23, large.yaml's 2,240 nodes
# (SCALE_NODES grows it) on this host with every node powered down, SCALE_PENDING held jobs, then
# `hetsched bench cycle --live` (results/cycle/large_live.py); ports SCALE_PORT .. SCALE_PORT+100.
SCALE_NODES ?=
SCALE_PENDING ?= 100000
SCALE_PORT ?= 30000
SCALE_ROOT ?= /var/lib/hetsched/bench-scale
# SCALE_POLICY: the cycle's policy file, e.g. results/cycle/policies/budget-10s.json (a time budget per cycle)
SCALE_POLICY ?=
bench-scale: install
	$(RUN) python results/cycle/large_live.py --pending $(SCALE_PENDING) --port $(SCALE_PORT) --root $(SCALE_ROOT) \
	  $(if $(SCALE_NODES),--nodes $(SCALE_NODES)) $(if $(SCALE_POLICY),--unheld --cycles 3 --policy-file $(SCALE_POLICY)) \
	  --output results/cycle/live-large-$$(date -u +%Y%m%dT%H%M%SZ).json

# Not part of `make test` either: the container cluster (Podman; MariaDB + slurmdbd + slurmctld + a container per
# node, images built from Debian packages on first use) and its system tests (tests/containers). RELEASE picks
# the Debian release of the images: bookworm (Slurm 22.05) or trixie (Slurm 24.11).
RELEASE ?= bookworm
CONTAINER_ROOT ?= /var/lib/hetsched/containers
CONTAINER_SITE ?= demo
containers-deps: install
	@$(MAKE) --no-print-directory deps APT_PACKAGES="podman runc mmdebstrap"
	@$(PY) -c 'import podman_compose, compose_spec' 2>/dev/null || $(PY) -m pip install -q -e '.[test,containers]'

containers-up: containers-deps
	$(RUN) hetsched cluster up --containers $(CONTAINER_SITE) --root $(CONTAINER_ROOT) --release $(RELEASE)

containers-down:
	$(RUN) hetsched cluster down --containers --root $(CONTAINER_ROOT)

test-containers: containers-deps
	HETSCHED_CONTAINER_TESTS=1 HETSCHED_CONTAINER_RELEASE=$(RELEASE) $(RUN) python -m pytest tests/containers

# Not part of `make test` either: the VM form's system test (tests/system/test_deploy_vm.py), one real QEMU boot
# without KVM (TCG; ~1 min with its cluster at load 16). vm-deps installs QEMU and, when /boot has no kernel
# (a container or a Firecracker VM), extracts Debian's cloud kernel from its package into VM_DIR (downloaded
# with apt-get download and unpacked with dpkg-deb: nothing installed, no initramfs-tools run).
VM_DIR ?= /var/lib/hetsched/vm
vm-deps: install
	@$(MAKE) --no-print-directory deps APT_PACKAGES="qemu-system-x86 busybox-static" APT_FLAGS=--no-install-recommends
	@if ! ls /boot/vmlinuz-* >/dev/null 2>&1 && [ ! -f $(VM_DIR)/vmlinuz ]; then \
	  set -e; rm -rf $(VM_DIR)/deb; mkdir -p $(VM_DIR)/deb; cd $(VM_DIR)/deb; apt-get update -qq; \
	  pkg=$$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/{print $$2; exit}'); \
	  echo "apt-get download $$pkg (only its vmlinuz is kept, in $(VM_DIR))"; apt-get download -qq $$pkg; \
	  dpkg-deb --fsys-tarfile $${pkg}_*.deb | tar -x --wildcards './boot/vmlinuz-*'; \
	  mv boot/vmlinuz-* ../vmlinuz; cd ..; rm -rf deb; fi

test-vm: vm-deps
	HETSCHED_VM_TESTS=1 HETSCHED_VM_DIR=$(VM_DIR) $(RUN) python -m pytest tests/system/test_deploy_vm.py

clean-cluster:
	$(RUN) hetsched cluster down --root $(DEMO_ROOT)
