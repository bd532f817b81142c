#!/usr/bin/env bash
# A real one-node SLURM cluster on this machine, for the tests and for trying the SLURM profile:
#
#   bash setup/cluster/local-slurm.sh start    # install what is missing, start, wait for the node
#   bash setup/cluster/local-slurm.sh status   # the daemons, their pids and sinfo
#   bash setup/cluster/local-slurm.sh stop     # stop the daemons this script started
#
# Needs root (it installs Debian packages and runs the daemons as root) and no systemd: the
# daemons are started directly. Everything lives in $RANKSTUDY_SLURM_DIR (default
# /tmp/rankstudy-slurm): slurm.conf and slurmdbd.conf under etc/, logs under log/, pids under
# run/, slurmctld's state, slurmd's spool and the accounting database (MariaDB) beside them.
#
# Accounting: Snakemake's SLURM executor asks `sacct` for the state of its jobs, and SLURM 22.05
# has no accounting store but slurmdbd (with `accounting_storage/none`, sacct only answers
# "Slurm accounting storage is disabled"). So this cluster runs slurmdbd on a MariaDB instance
# of its own (127.0.0.1, port $RANKSTUDY_SLURM_DB_PORT, default 3307), with the cluster
# registered by `sacctmgr`, like a real site.
#
# Configuration: the daemons are started with SLURM_CONF pointing at etc/slurm.conf, and
# /etc/slurm/slurm.conf is made a symlink to it, so that every client command (sinfo, sbatch,
# squeue, sacct, srun inside the jobs) finds the cluster without any environment variable. An
# existing /etc/slurm/slurm.conf that is not ours is moved to /etc/slurm/slurm.conf.rankstudy-backup
# and put back by `stop`. munged uses the system's key (/etc/munge/munge.key, created if
# absent) and socket; a munged that already runs is used and left alone.
#
# Ports: slurmctld 6817, slurmd 6818, slurmdbd 6819 (SLURM's defaults), MariaDB 3307, all on
# 127.0.0.1 only (munged has a unix socket only): a test cluster answers nobody else. MariaDB has
# --bind-address=127.0.0.1. The SLURM daemons have no address setting of their own (slurmdbd's
# DbdAddr and DbdHost only name its host); with CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
# in slurm.conf (slurmctld, slurmd) and NoInAddrAny in slurmdbd.conf (not in SLURM 22.05's man
# page, but slurmdbd parses it and binds through the same libslurm code) each binds the first
# IPv4 address that the machine's host name resolves to, instead of 0.0.0.0. So 'start' needs
# the host name (`hostname`) to resolve to 127.0.0.1 (/etc/hosts), and says so otherwise: to any
# other address the daemons would bind that one, where the clients (which use 127.0.0.1) do not
# find them.
set -euo pipefail

DIR=${RANKSTUDY_SLURM_DIR:-/tmp/rankstudy-slurm}
CLUSTER=${RANKSTUDY_SLURM_CLUSTER:-rankstudy}
PARTITION=${RANKSTUDY_SLURM_PARTITION:-main}
DB_PORT=${RANKSTUDY_SLURM_DB_PORT:-3307}
TIMEOUT=${RANKSTUDY_SLURM_TIMEOUT:-90}
ETC=$DIR/etc
LOG=$DIR/log
RUN=$DIR/run
CONF=$ETC/slurm.conf
SYSTEM_CONF=/etc/slurm/slurm.conf
BACKUP=$SYSTEM_CONF.rankstudy-backup
NODE=$(hostname -s)
export SLURM_CONF=$CONF

# daemon name -> the process name (/proc/PID/comm) its recorded pid must still have
declare -A COMM=([munged]=munged [mariadbd]=mariadbd [slurmdbd]=slurmdbd [slurmctld]=slurmctld [slurmd]=slurmd)
ORDER=(munged mariadbd slurmdbd slurmctld slurmd)

say() { echo "[local-slurm] $*"; }
die() { echo "[local-slurm] error: $*" >&2; exit 1; }

# --- pids -------------------------------------------------------------------------------------

pid_of() {  # the recorded pid of a daemon, if it is still that daemon
    local f=$RUN/$1.pid pid
    [ -s "$f" ] || return 1
    pid=$(cat "$f")
    [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "${COMM[$1]}" ] && echo "$pid"
}

running() { pid_of "$1" >/dev/null; }

stop_pid() {  # TERM, wait up to 30 s, then KILL
    local name=$1 pid=$2 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 60); do
        [ -d "/proc/$pid" ] || { say "stopped $name (pid $pid)"; return 0; }
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null || true
    say "killed $name (pid $pid): it did not stop on TERM within 30 s"
}

tails() {  # the daemons' logs, for an error message
    local f
    for f in "$LOG"/*.log "$LOG"/*.out; do
        [ -f "$f" ] || continue
        echo "----- last lines of $f" >&2
        tail -n 25 "$f" >&2
    done
}

# --- installation -----------------------------------------------------------------------------

install_packages() {
    local missing=() cmd pkg
    for cmd in munged:munge slurmctld:slurmctld slurmd:slurmd slurmdbd:slurmdbd sbatch:slurm-client \
               sacct:slurm-client mariadbd:mariadb-server mariadb:mariadb-client; do
        command -v "${cmd%%:*}" >/dev/null 2>&1 || missing+=("${cmd#*:}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run as root to install them (apt-get)"
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    say "installing Debian packages: ${missing[*]} (apt-get install -y --no-install-recommends)"
    # keep the packages' maintainer scripts from starting the services: this script starts them
    local policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
    fi
    local rc=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    } >"${TMPDIR:-/tmp}/rankstudy-slurm-apt.log" 2>&1 || rc=$?
    [ -n "$policy" ] && rm -f "$policy"
    if [ $rc -ne 0 ]; then
        tail -n 30 "${TMPDIR:-/tmp}/rankstudy-slurm-apt.log" >&2
        die "apt-get failed (exit $rc), log: ${TMPDIR:-/tmp}/rankstudy-slurm-apt.log"
    fi
    say "installed ${missing[*]}"
}

# --- configuration ----------------------------------------------------------------------------

write_config() {
    mkdir -p "$ETC" "$LOG" "$RUN/daemon" "$DIR/state" "$DIR/spool"
    local cpus mem_kb mem_mb
    cpus=$(nproc)
    mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
    # leave the system 5% (at least 512 MB): slurmd marks a node invalid that has less than this
    mem_mb=$(( mem_kb / 1024 ))
    mem_mb=$(( mem_mb - (mem_mb / 20 > 512 ? mem_mb / 20 : 512) ))
    cat >"$CONF" <<EOF
# Written by setup/cluster/local-slurm.sh: a one-node cluster for tests. Do not edit: 'start' rewrites it.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
# slurmctld and slurmd bind the address their host name resolves to here (127.0.0.1), not every
# address of the machine: a test cluster answers nobody else (slurmdbd.conf does the same)
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$RUN/daemon/slurmctld.pid
SlurmdPidFile=$RUN/daemon/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
# no cgroups (containers seldom delegate them): processes tracked through /proc, no task binding,
# so a job's mem_mb is what the scheduler books, not a limit the kernel enforces
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
# accounting through slurmdbd: sacct answers the SLURM executor's status queries
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobCompType=jobcomp/none
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
Waittime=0
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    local pass_file=$ETC/db.pass
    [ -s "$pass_file" ] || (umask 077 && head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$pass_file")
    (umask 077 && cat >"$ETC/slurmdbd.conf" <<EOF
# Written by setup/cluster/local-slurm.sh.
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
# listen only on the address this host's name resolves to, 127.0.0.1, not on 0.0.0.0
CommunicationParameters=NoInAddrAny
SlurmUser=root
PidFile=$RUN/daemon/slurmdbd.pid
LogFile=$LOG/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$pass_file")
StorageLoc=slurm_acct_db
EOF
    )
    chmod 600 "$ETC/slurmdbd.conf"
    link_system_conf
}

link_system_conf() {
    mkdir -p "$(dirname "$SYSTEM_CONF")"
    if [ -L "$SYSTEM_CONF" ] && [ "$(readlink "$SYSTEM_CONF")" = "$CONF" ]; then
        return 0
    fi
    if [ -e "$SYSTEM_CONF" ] || [ -L "$SYSTEM_CONF" ]; then
        [ -e "$BACKUP" ] || [ -L "$BACKUP" ] && die "$SYSTEM_CONF is not ours and $BACKUP exists already: move one of them away"
        mv "$SYSTEM_CONF" "$BACKUP"
        say "moved the existing $SYSTEM_CONF to $BACKUP ('stop' puts it back)"
    fi
    ln -s "$CONF" "$SYSTEM_CONF"
}

unlink_system_conf() {
    if [ -L "$SYSTEM_CONF" ] && [ "$(readlink "$SYSTEM_CONF")" = "$CONF" ]; then
        rm -f "$SYSTEM_CONF"
        if [ -e "$BACKUP" ] || [ -L "$BACKUP" ]; then
            mv "$BACKUP" "$SYSTEM_CONF"
            say "restored $SYSTEM_CONF from $BACKUP"
        fi
    fi
}

# --- daemons ----------------------------------------------------------------------------------

launch() {  # launch NAME CMD...: run a daemon in the foreground of a session of its own, record its pid
    local name=$1; shift
    # setsid and setpriv exec (no fork): $! is the daemon's own pid
    setsid "$@" >>"$LOG/$name.out" 2>&1 </dev/null &
    echo $! >"$RUN/$name.pid"
}

check_started() {  # after wait_for: the recorded pid must be the daemon itself
    running "$1" || { tails; die "$1 is up but not as the process this script started (pid $(cat "$RUN/$1.pid"))"; }
}

wait_for() {  # wait_for WHAT SECONDS CMD...: until CMD succeeds
    local what=$1 secs=$2 i; shift 2
    for i in $(seq $(( secs * 2 ))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    tails
    die "$what did not come up within $secs s (logs in $LOG)"
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        running munged && return 0
        say "munged already runs (not started by this script; left alone)"
        return 0
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        say "creating the munge key /etc/munge/munge.key"
        mkdir -p /etc/munge
        (umask 077 && dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none)
    fi
    local user=root
    getent passwd munge >/dev/null && user=munge
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown "$user": /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
    chmod 0700 /etc/munge
    chmod 0400 /etc/munge/munge.key
    chmod 0755 /run/munge
    # as the munge user, as Debian's service runs it (setpriv execs, so the pid stays munged's)
    launch munged setpriv --reuid="$user" --regid="$user" --init-groups munged --foreground
    wait_for munged 20 bash -c 'munge -n | unmunge'
    check_started munged
}

start_mariadb() {
    local data=$DIR/mysql sock=$RUN/mysqld.sock
    if [ ! -d "$data/mysql" ]; then
        say "creating the accounting database in $data"
        mkdir -p "$data"
        mariadb-install-db --no-defaults --datadir="$data" --user=root --auth-root-authentication-method=socket \
            --skip-test-db >"$LOG/mariadb-install.log" 2>&1 || { tail -n 20 "$LOG/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
    fi
    launch mariadbd mariadbd --no-defaults --user=root --datadir="$data" --socket="$sock" \
        --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$LOG/mariadb.log" \
        --pid-file="$RUN/daemon/mariadbd.pid" --innodb-buffer-pool-size=64M --innodb-log-file-size=16M
    wait_for MariaDB 60 mariadb-admin --no-defaults --socket="$sock" -u root ping
    check_started mariadbd
    local pass
    pass=$(cat "$ETC/db.pass")
    mariadb --no-defaults --socket="$sock" -u root <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF
}

ipv4_of() { getent ahostsv4 "$1" 2>/dev/null | awk 'NR == 1 {print $1}'; }

check_host_name() {  # the daemons bind what the host name resolves to (see 'Ports' above)
    local name addr
    name=$(hostname)
    addr=$(ipv4_of "$name")
    [ "$addr" = 127.0.0.1 ] && return 0
    die "this machine's host name '$name' resolves to ${addr:-no IPv4 address}, not 127.0.0.1: slurmctld, slurmd and slurmdbd (CommunicationParameters=NoInAddrAny) would listen there, not where the clients look; map it to 127.0.0.1 in /etc/hosts ('127.0.0.1 $name')"
}

start_slurmdbd() {
    launch slurmdbd slurmdbd -D
    wait_for slurmdbd 60 sacctmgr -n list cluster
    check_started slurmdbd
    if [ -z "$(sacctmgr -n -P list cluster format=cluster where cluster="$CLUSTER")" ]; then
        sacctmgr -i add cluster "$CLUSTER" >/dev/null
        say "registered the cluster '$CLUSTER' with slurmdbd"
    fi
}

node_state() { sinfo -h -n "$NODE" -o %t 2>/dev/null | head -n 1; }

wait_node_idle() {
    local i state=""
    for i in $(seq $(( TIMEOUT * 2 ))); do
        state=$(node_state) || true
        case "$state" in
            idle|mix|mixed|alloc|allocated) return 0 ;;
            drain*|down*|inval*)
                scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
        esac
        sleep 0.5
    done
    tails
    scontrol show node "$NODE" >&2 2>&1 || true
    die "node $NODE is not idle after ${TIMEOUT} s (state: '${state:-no answer from slurmctld}'); logs in $LOG"
}

all_running() {
    local d
    for d in mariadbd slurmdbd slurmctld slurmd; do running "$d" || return 1; done
}

cmd_start() {
    if all_running && [ -n "$(node_state)" ]; then
        say "already running (node $NODE: $(node_state)); nothing to do"
        return 0
    fi
    if ls "$RUN"/*.pid >/dev/null 2>&1; then
        say "some daemons of an earlier start are gone: stopping the rest and starting again"
        cmd_stop
    fi
    install_packages
    check_host_name
    write_config
    say "starting a one-node cluster '$CLUSTER' in $DIR (node $NODE, $(nproc) CPUs, partition $PARTITION)"
    start_munge
    start_mariadb
    start_slurmdbd
    launch slurmctld slurmctld -D -f "$CONF"
    wait_for slurmctld 60 scontrol ping
    check_started slurmctld
    launch slurmd slurmd -D -f "$CONF"
    wait_node_idle
    check_started slurmd
    say "ready: $(sinfo -h -o '%P %D %t %c CPUs %m MB' | head -n 1) (SLURM_CONF $CONF, linked from $SYSTEM_CONF)"
}

cmd_stop() {
    local d pid i
    if running slurmctld; then
        # cancel what is still queued or running on this cluster, so no job step outlives slurmd
        squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null || true
    fi
    for (( i = ${#ORDER[@]} - 1; i >= 0; i-- )); do
        d=${ORDER[$i]}
        if pid=$(pid_of "$d"); then
            stop_pid "$d" "$pid"
        fi
        rm -f "$RUN/$d.pid"
    done
    unlink_system_conf
    say "stopped (state kept in $DIR)"
}

cmd_status() {
    local d pid rc=0
    for d in "${ORDER[@]}"; do
        if pid=$(pid_of "$d"); then
            say "$d: running (pid $pid)"
        elif [ "$d" = munged ] && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
            say "munged: running (not started by this script)"
        else
            say "$d: not running"
            rc=3
        fi
    done
    if [ $rc -eq 0 ]; then
        sinfo
    fi
    return $rc
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
