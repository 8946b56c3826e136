#!/bin/sh
# Starts Debian's PgBouncer as a daemon in transaction mode (what managed PostgreSQL offerings put
# in front of the database) on 127.0.0.1:LISTEN_PORT, in front of the PostgreSQL on
# 127.0.0.1:UPSTREAM_PORT, with trust auth for root and postgres; its config, log and pid file go in
# DIR. Used by .ci/run and by the swarm (swarm/run.ts). Stop it with: kill "$(cat DIR/pgbouncer.pid)".
# PgBouncer refuses to run as root: as root it runs as the postgres user.
#   usage: scripts/pgbouncer.sh DIR LISTEN_PORT UPSTREAM_PORT
set -eu
dir=$1
port=$2
upstream=$3
mkdir -p "$dir"
cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$upstream

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits
# After PostgreSQL restarts, try logging in to it again within a second (default 15 s).
server_login_retry = 1
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
printf '"root" ""\n"postgres" ""\n' >"$dir/users.txt"
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$dir"
  pgbouncer -d -u postgres "$dir/pgbouncer.ini"
else
  pgbouncer -d "$dir/pgbouncer.ini"
fi
for _ in $(seq 1 100); do
  if pg_isready -h 127.0.0.1 -p "$port" -q; then exit 0; fi
  sleep 0.1
done
echo "PgBouncer did not start on 127.0.0.1:$port:" >&2
cat "$dir/pgbouncer.log" >&2 || true
exit 1
