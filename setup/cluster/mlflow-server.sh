#!/usr/bin/env bash
# An MLflow tracking server on PostgreSQL, for pipelines whose jobs log at the same time from
# several processes (or machines) instead of taking turns on the SQLite file:
#
#   eval "$(bash setup/cluster/mlflow-server.sh start)"   # start (or find running), export the URIs
#   bash setup/cluster/mlflow-server.sh status            # both daemons, their pids and ports
#   bash setup/cluster/mlflow-server.sh env               # the export lines again
#   bash setup/cluster/mlflow-server.sh gc                # purge every soft-deleted run now
#   bash setup/cluster/mlflow-server.sh stop              # stop MLflow, then PostgreSQL
#   bash setup/cluster/mlflow-server.sh find-postgres     # PostgreSQL's bin folder, or exit 1
#
# `start` prints only the export lines on stdout (messages go to stderr):
#
#   export MLFLOW_TRACKING_URI=http://127.0.0.1:<port>          what the jobs log to
#   export RANKSTUDY_MLFLOW_BACKEND_STORE_URI=postgresql://...  the database behind it: lets a job
#                                                               purge the runs its rerun replaced
#   export RANKSTUDY_TUNE_STORAGE=postgresql://.../optuna       a second database, for the Optuna
#                                                               studies that tuning workers on
#                                                               several nodes share (tune.storage)
#
# Everything lives in $RANKSTUDY_MLFLOW_DIR (default /tmp/rankstudy-mlflow): pg/data (the
# database cluster, initdb'd on first start), pg/run (its socket), pg/postgresql.log,
# artifacts/ (the server's --artifacts-destination: runs record `mlflow-artifacts:/` URIs and
# clients up- and download through the server), mlflow.log, state (ports, pids, password; mode
# 600) and env (the export lines). `start` on a running server only prints them again; after
# `stop`, `start` reuses the data, and the ports when they are still free.
#
# PostgreSQL refuses to run as root: as root the database runs as $RANKSTUDY_PG_USER, default
# `postgres` (Debian's package creates it) or else a system user `rankstudy` created here;
# as any other user it runs as that user. Its binaries are found on PATH, in $RANKSTUDY_PG_BIN,
# or in /usr/lib/postgresql/<version>/bin (Debian: apt-get install postgresql). It listens on
# 127.0.0.1 only, with a password (scram-sha-256) for the `mlflow` role that owns the `mlflow`
# database. MLflow runs as the calling user from the project's .venv ($RANKSTUDY_PYTHON to
# choose another Python), on 127.0.0.1 ($RANKSTUDY_MLFLOW_HOST to bind elsewhere), with
# $RANKSTUDY_MLFLOW_WORKERS worker processes (default 2). Ports: $RANKSTUDY_MLFLOW_PORT and
# $RANKSTUDY_PG_PORT, default free ones.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE_DIR=$(realpath -m "${RANKSTUDY_MLFLOW_DIR:-/tmp/rankstudy-mlflow}")
PG_DIR=$STATE_DIR/pg
PGDATA=$PG_DIR/data
PG_RUN=$PG_DIR/run
PG_LOG=$PG_DIR/postgresql.log
ARTIFACTS=$STATE_DIR/artifacts
MLFLOW_LOG=$STATE_DIR/mlflow.log
STATE=$STATE_DIR/state
ENV_FILE=$STATE_DIR/env
DB=mlflow
TUNE_DB=optuna  # the tuning studies: a database of their own (Optuna and MLflow both keep alembic_version)
DB_ROLE=mlflow
HOST=${RANKSTUDY_MLFLOW_HOST:-127.0.0.1}
WORKERS=${RANKSTUDY_MLFLOW_WORKERS:-2}
START_TIMEOUT=${RANKSTUDY_MLFLOW_START_TIMEOUT:-180}

say() { echo "[mlflow-server] $*" >&2; }
die() { say "error: $*"; exit 1; }

python_bin() {
    if [ -n "${RANKSTUDY_PYTHON:-}" ]; then echo "$RANKSTUDY_PYTHON"
    elif [ -x "$REPO/.venv/bin/python" ]; then echo "$REPO/.venv/bin/python"
    else command -v python3 || die "no python3 found (set RANKSTUDY_PYTHON)"
    fi
}
PY=$(python_bin)

find_pg_bin() {
    local dir
    # pg_ctl on PATH may be a symlink into the version's folder (which also has psql)
    for dir in "${RANKSTUDY_PG_BIN:-}" "$(dirname "$(realpath "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/x)" 2>/dev/null)")" \
               $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ] && [ -x "$dir/psql" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

# ---------------------------------------------------------------- state

STATE_KEYS=(PG_USER PG_BIN PG_PORT PG_PASSWORD MLFLOW_PORT MLFLOW_PID)

load_state() {
    local key
    for key in "${STATE_KEYS[@]}"; do printf -v "$key" '%s' ""; done
    # shellcheck disable=SC1090
    if [ -f "$STATE" ]; then . "$STATE"; fi
}

save_state() {
    local key tmp=$STATE.tmp
    (umask 077; for key in "${STATE_KEYS[@]}"; do printf '%s=%q\n' "$key" "${!key}"; done > "$tmp")
    mv "$tmp" "$STATE"
}

# the server as this machine reaches it, and as the jobs (maybe on other machines) do
local_uri() { local h=$HOST; [ "$h" = 0.0.0.0 ] && h=127.0.0.1; echo "http://$h:$MLFLOW_PORT"; }
client_uri() { local h=$HOST; [ "$h" = 0.0.0.0 ] && h=$(hostname -f 2>/dev/null || hostname); echo "http://$h:$MLFLOW_PORT"; }
backend_uri() { echo "postgresql://$DB_ROLE:$PG_PASSWORD@127.0.0.1:$PG_PORT/$DB"; }
tune_uri() { echo "postgresql://$DB_ROLE:$PG_PASSWORD@127.0.0.1:$PG_PORT/$TUNE_DB"; }

env_lines() {
    echo "export MLFLOW_TRACKING_URI=$(client_uri)"
    echo "export RANKSTUDY_MLFLOW_BACKEND_STORE_URI=$(backend_uri)"
    echo "export RANKSTUDY_TUNE_STORAGE=$(tune_uri)"
}

# ---------------------------------------------------------------- helpers

port_free() {  # port_free PORT: can we bind it on 127.0.0.1 (and $HOST)?
    "$PY" - "$1" "$HOST" <<'PY'
import socket, sys
port, host = int(sys.argv[1]), sys.argv[2]
for h in {"127.0.0.1", host}:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is free
        try:
            s.bind((h, port))
        except OSError:
            sys.exit(1)
PY
}

free_port() {  # free_port [PREFERRED]: PREFERRED if free, else one the kernel picks
    if [ -n "${1:-}" ] && port_free "$1"; then echo "$1"; return; fi
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

as_pg() {  # run a PostgreSQL command as the database's user, from a folder it can read
    if [ "$PG_USER" = "$(id -un)" ]; then (cd / && "$@")
    else (cd / && runuser -u "$PG_USER" -- "$@")
    fi
}

choose_pg_user() {
    if [ "$(id -u)" != 0 ]; then PG_USER=$(id -un); return; fi
    PG_USER=${RANKSTUDY_PG_USER:-}
    if [ -z "$PG_USER" ]; then
        if getent passwd postgres >/dev/null; then PG_USER=postgres; else PG_USER=rankstudy; fi
    fi
    if ! getent passwd "$PG_USER" >/dev/null; then
        say "creating system user $PG_USER to run PostgreSQL (it refuses to run as root)"
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_USER"
    fi
}

pg_running() { [ -f "$PGDATA/PG_VERSION" ] && as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; }

mlflow_alive() {  # the recorded pid is alive and is an MLflow server
    [ -n "$MLFLOW_PID" ] && [ -r "/proc/$MLFLOW_PID/cmdline" ] \
        && tr '\0' ' ' < "/proc/$MLFLOW_PID/cmdline" | grep -q mlflow
}

healthy() {  # healthy [TIMEOUT]: GET /health answers OK within TIMEOUT seconds
    "$PY" - "$(local_uri)/health" "${1:-0}" "${MLFLOW_PID:-0}" <<'PY'
import os, sys, time, urllib.request
url, timeout, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + timeout
while True:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        pass
    if time.monotonic() >= deadline or (pid and not os.path.exists(f"/proc/{pid}")):
        sys.exit(1)
    time.sleep(0.5)
PY
}

psql_admin() {  # SQL on stdin, as the superuser over the socket
    as_pg "$PG_BIN/psql" -h "$PG_RUN" -p "$PG_PORT" -d postgres -v ON_ERROR_STOP=1 -qAtX "$@"
}

# ---------------------------------------------------------------- PostgreSQL

init_pg() {
    say "initdb $PGDATA (as $PG_USER)"
    mkdir -p "$PG_DIR"
    chown "$PG_USER" "$PG_DIR"
    chmod 700 "$PG_DIR"
    as_pg mkdir -p "$PG_RUN"
    as_pg "$PG_BIN/initdb" -D "$PGDATA" -E UTF8 --locale=C --auth-local=peer \
        --auth-host=scram-sha-256 >"$STATE_DIR/initdb.log" 2>&1 \
        || { cat "$STATE_DIR/initdb.log" >&2; die "initdb failed"; }
}

start_pg() {
    PG_PORT=$(free_port "${RANKSTUDY_PG_PORT:-$PG_PORT}")
    say "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    as_pg mkdir -p "$PG_RUN"
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PG_LOG" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$PG_RUN" start >&2 9>&- \
        || { tail -n 30 "$PG_LOG" >&2 || true; die "PostgreSQL did not start (log: $PG_LOG)"; }
}

ensure_database() {
    if [ -z "$PG_PASSWORD" ]; then PG_PASSWORD=$("$PY" -c 'import secrets; print(secrets.token_hex(16))'); fi
    # the password goes over stdin, not the command line
    psql_admin <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_ROLE') THEN CREATE ROLE $DB_ROLE LOGIN; END IF;
END \$\$;
ALTER ROLE $DB_ROLE WITH LOGIN PASSWORD '$PG_PASSWORD';
SQL
    local db
    for db in "$DB" "$TUNE_DB"; do
        if [ -z "$(echo "SELECT 1 FROM pg_database WHERE datname = '$db'" | psql_admin)" ]; then
            say "creating database $db"
            echo "CREATE DATABASE $db OWNER $DB_ROLE" | psql_admin
        fi
    done
}

# ---------------------------------------------------------------- MLflow

start_mlflow() {
    MLFLOW_PORT=$(free_port "${RANKSTUDY_MLFLOW_PORT:-$MLFLOW_PORT}")
    mkdir -p "$ARTIFACTS"
    local allowed="127.0.0.1:$MLFLOW_PORT,localhost:$MLFLOW_PORT"
    if [ "$HOST" != 127.0.0.1 ]; then
        allowed="$allowed,$HOST:$MLFLOW_PORT,$(hostname):$MLFLOW_PORT,$(hostname -f 2>/dev/null || hostname):$MLFLOW_PORT"
    fi
    say "starting mlflow server on $(client_uri) (log: $MLFLOW_LOG)"
    # The backend URI (with the password) goes through the environment, not the command line.
    # Own session (setsid), so `stop` ends the server and its workers together. Background job
    # execution (GenAI evaluation jobs) is not needed: it would cost a process.
    MLFLOW_BACKEND_STORE_URI=$(backend_uri) MLFLOW_SERVER_ENABLE_JOB_EXECUTION=${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false} \
    MLFLOW_DISABLE_TELEMETRY=true \
        setsid "$PY" -m mlflow server --serve-artifacts --artifacts-destination "$ARTIFACTS" \
            --host "$HOST" --port "$MLFLOW_PORT" --workers "$WORKERS" --allowed-hosts "$allowed" \
            </dev/null >"$MLFLOW_LOG" 2>&1 9>&- &
    MLFLOW_PID=$!
    save_state
    # the first start creates MLflow's schema in PostgreSQL: that takes a while
    if ! healthy "$START_TIMEOUT"; then
        tail -n 40 "$MLFLOW_LOG" >&2 || true
        stop_mlflow
        die "mlflow server did not answer on $(local_uri)/health within $START_TIMEOUT s (log: $MLFLOW_LOG)"
    fi
}

stop_mlflow() {
    if mlflow_alive; then
        say "stopping mlflow server (pid $MLFLOW_PID)"
        kill -TERM -- "-$MLFLOW_PID" 2>/dev/null || kill -TERM "$MLFLOW_PID" 2>/dev/null || true
        local i
        for i in $(seq 1 100); do mlflow_alive || break; sleep 0.2; done
        if mlflow_alive; then kill -KILL -- "-$MLFLOW_PID" 2>/dev/null || kill -KILL "$MLFLOW_PID" 2>/dev/null || true; fi
    fi
    MLFLOW_PID=
}

# ---------------------------------------------------------------- commands

with_lock() {  # one start/stop at a time per state folder (the daemons must not inherit fd 9)
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/.lock"
    flock 9
}

cmd_start() {
    PG_BIN=$(find_pg_bin) || die "PostgreSQL's binaries (initdb, pg_ctl, postgres, psql) not found: apt-get install postgresql, or set RANKSTUDY_PG_BIN"
    "$PY" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("mlflow") and u.find_spec("psycopg2")))' \
        || die "$PY lacks mlflow or psycopg2 (pip install -e '.[cluster]')"
    with_lock
    chmod 711 "$STATE_DIR"  # the database's user must reach pg/ inside
    load_state
    PG_BIN=$(find_pg_bin)
    if [ -z "$PG_USER" ]; then choose_pg_user; fi
    as_pg test -x "$STATE_DIR" \
        || die "$PG_USER cannot reach $STATE_DIR: choose a folder whose parents it may enter (RANKSTUDY_MLFLOW_DIR)"
    if [ ! -f "$PGDATA/PG_VERSION" ]; then init_pg; fi
    if ! pg_running; then start_pg; fi
    save_state
    ensure_database
    save_state
    if mlflow_alive && healthy 30; then
        say "already running: mlflow pid $MLFLOW_PID on $(client_uri), PostgreSQL on 127.0.0.1:$PG_PORT"
    else
        stop_mlflow
        start_mlflow
        say "ready: $(client_uri) (pid $MLFLOW_PID), PostgreSQL 127.0.0.1:$PG_PORT, artifacts in $ARTIFACTS"
    fi
    (umask 077; env_lines > "$ENV_FILE")
    env_lines
}

cmd_stop() {
    [ -d "$STATE_DIR" ] || { say "nothing to stop: $STATE_DIR does not exist"; return 0; }
    with_lock
    load_state
    stop_mlflow
    save_state
    if [ -n "$PG_BIN" ] && [ -n "$PG_USER" ] && pg_running; then
        say "stopping PostgreSQL ($PGDATA)"
        as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >&2
    fi
    say "stopped"
}

cmd_status() {
    load_state
    local rc=0
    if [ -n "$PG_BIN" ] && [ -n "$PG_USER" ] && pg_running; then
        echo "postgresql: running on 127.0.0.1:$PG_PORT as $PG_USER (data: $PGDATA)"
    else
        echo "postgresql: stopped"; rc=3
    fi
    if mlflow_alive && healthy 5; then
        echo "mlflow:     running on $(client_uri), pid $MLFLOW_PID (artifacts: $ARTIFACTS)"
    elif mlflow_alive; then
        echo "mlflow:     pid $MLFLOW_PID alive but $(local_uri)/health does not answer"; rc=3
    else
        echo "mlflow:     stopped"; rc=3
    fi
    return $rc
}

cmd_env() {
    load_state
    mlflow_alive || die "not running (start it: $0 start)"
    env_lines
}

cmd_gc() {  # purge every run in the deleted stage: rows from PostgreSQL, artifacts through the server
    load_state
    mlflow_alive || die "not running (start it: $0 start)"
    # the password goes through the environment (libpq's PGPASSWORD), not the command line,
    # which every user can read (/proc/<pid>/cmdline)
    PGPASSWORD=$PG_PASSWORD MLFLOW_TRACKING_URI=$(local_uri) "$PY" -m mlflow gc \
        --backend-store-uri "postgresql://$DB_ROLE@127.0.0.1:$PG_PORT/$DB" --tracking-uri "$(local_uri)"
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) cmd_env ;;
    gc) cmd_gc ;;
    find-postgres) find_pg_bin || { say "PostgreSQL's binaries not found"; exit 1; } ;;
    *) echo "usage: $0 start|stop|status|env|gc|find-postgres" >&2; exit 2 ;;
esac
