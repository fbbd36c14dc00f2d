#!/bin/bash
# Entry of every container of the hetsched container cluster (mounted read-only at /etc/slurm with the
# cluster's configs; changing it needs no image rebuild). HETSCHED_ROLE chooses what runs as the container's
# main process: db (MariaDB), dbd (slurmdbd), ctl (slurmctld), node (slurmd, hostname = NodeName), suite (the
# admission daemon job_submit.lua asks through /run/hetsched, and the steering cycle; the repository mounted at
# /opt/hetsched). Every role runs the same image (slurm_plugin/cluster/images.py: every role's packages).
#   HETSCHED_USERS    "name:uid ..." accounts created in every container (jobs run as them)
#   HETSCHED_DEVICES  fake accelerator device files made on a node (character devices 1:3, like /dev/null)
#   HETSCHED_DB       address of MariaDB (dbd), HETSCHED_DBD address of slurmdbd (ctl), HETSCHED_CLUSTER its name
#   HETSCHED_CTL      address:port of slurmctld (suite), HETSCHED_CYCLE_ARGS extra options of `hetsched cycle run`
set -euo pipefail
role=${HETSCHED_ROLE:?HETSCHED_ROLE is not set}
say() { echo "[hetsched-entry $role $(date -u +%H:%M:%S)] $*"; }

for user in ${HETSCHED_USERS:-}; do
  id -u "${user%%:*}" >/dev/null 2>&1 || useradd -M -d /tmp -s /bin/sh -u "${user##*:}" "${user%%:*}"
done

wait_port() {  # HOST PORT: until something listens there (bash's /dev/tcp)
  until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do sleep 0.3; done
}

start_munge() {
  install -o munge -g munge -m 0400 /etc/slurm/munge.key /etc/munge/munge.key
  install -d -o munge -g munge /run/munge
  runuser -u munge -- /usr/sbin/munged
}

case $role in
  db)
    chown -R mysql:mysql /var/lib/mysql
    install -d -o mysql -g mysql /run/mysqld
    if [[ ! -d /var/lib/mysql/mysql ]]; then
      say "mariadb-install-db"
      mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >/dev/null
    fi
    mariadbd --user=mysql --datadir=/var/lib/mysql --bind-address=0.0.0.0 --skip-name-resolve \
      --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 &
    pid=$!
    trap 'kill -TERM $pid' TERM INT
    until mariadb-admin ping --silent 2>/dev/null; do kill -0 $pid; sleep 0.3; done
    pass=$(sed -n 's/^StoragePass=//p' /etc/slurm/slurmdbd.conf)
    mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'%' IDENTIFIED BY '$pass'; ALTER USER 'slurm'@'%' IDENTIFIED BY '$pass';
                GRANT ALL ON slurm_acct_db.* TO 'slurm'@'%'; FLUSH PRIVILEGES;"
    say "MariaDB ready"
    wait $pid
    ;;
  dbd)
    start_munge
    wait_port "${HETSCHED_DB:?}" 3306
    say "slurmdbd"
    exec slurmdbd -D
    ;;
  ctl)
    start_munge
    install -d /var/spool/slurmctld
    if [[ -n ${HETSCHED_DBD:-} ]]; then
      wait_port "$HETSCHED_DBD" 6819
      # the cluster must exist in the database before slurmctld registers (idempotent)
      sacctmgr -i -Q add cluster "${HETSCHED_CLUSTER:?}" >/dev/null 2>&1 || true
    fi
    say "slurmctld"
    exec slurmctld -D -i
    ;;
  node)
    start_munge
    install -d /var/spool/slurmd
    for dev in ${HETSCHED_DEVICES:-}; do
      [[ -e $dev ]] || { mkdir -p "$(dirname "$dev")"; mknod "$dev" c 1 3 2>/dev/null || touch "$dev"; }
    done
    # a started container is a booted node: slurmd -b reports its uptime from its own start, so slurmctld sees
    # a boot after its resume request (the host's boot time would be ignored until ResumeTimeout). slurmctld
    # reads that boot time in whole seconds and may place it up to 2 s before slurmd's start: 2 s of "boot"
    # keep it after the request (a container started 1.7 s after the request, with only the time namespace
    # below, was ignored: a CI run). Its jobs see a fresh boot clock (the time namespace).
    sleep 2
    say "slurmd $(hostname)"
    exec unshare --time --boottime "-$(cut -d. -f1 /proc/uptime)" slurmd -D -b
    ;;
  suite)
    start_munge
    wait_port "${HETSCHED_CTL%:*}" "${HETSCHED_CTL##*:}"
    export PYTHONPATH=/opt/hetsched SLURM_CONF=/etc/slurm/slurm.conf
    install -d /run/hetsched /var/lib/hetsched
    say "hetsched daemon and cycle"
    # shellcheck disable=SC2086  # HETSCHED_CYCLE_ARGS is a list of options
    python3 -m slurm_plugin cycle run /etc/slurm/site.yaml --state-dir /var/lib/hetsched \
      ${HETSCHED_CYCLE_ARGS:-} >>/var/log/hetsched/cycle.log 2>&1 &
    cycle=$!
    python3 -m slurm_plugin daemon run --socket /run/hetsched/hetsched.sock --site /etc/slurm/site.yaml \
      --slurm-conf /etc/slurm/slurm.conf --allow-user root --refresh 2 --metrics-listen 0.0.0.0:9817 \
      >>/var/log/hetsched/daemon.log 2>&1 &
    daemon=$!
    trap 'kill -TERM $cycle $daemon 2>/dev/null' TERM INT
    rc=0
    wait -n || rc=$?
    kill -TERM $cycle $daemon 2>/dev/null || true
    wait || true
    say "a suite process ended (exit $rc)"
    exit "$rc"
    ;;
  *) say "unknown role '$role' (db, dbd, ctl, node, suite)"; exit 2 ;;
esac
