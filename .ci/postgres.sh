#!/usr/bin/env bash
# A throwaway PostgreSQL server for the `Postgres` trait's tests, on loopback only:
#
#     .ci/postgres.sh start DIR   # a new cluster in DIR (empty or absent), started
#     .ci/postgres.sh env DIR     # prints the `export` lines the tests read
#     .ci/postgres.sh stop DIR    # stops the server and removes DIR
#
# Typical use:
#
#     dir=$(mktemp -d) && .ci/postgres.sh start "$dir" && eval "$(.ci/postgres.sh env "$dir")"
#     swift test --traits Postgres --filter Postgres
#     .ci/postgres.sh stop "$dir"
#
# The server listens on 127.0.0.1 on a free port, with its socket in DIR, and has one
# superuser with a password (scram-sha-256 over TCP) and one database. The tests read
# BACKGROUNDABLE_POSTGRES_HOST, _PORT, _USER, _PASSWORD and _DATABASE; without them they
# are skipped (and fail under CI=true). Needs PostgreSQL's server programs (Debian:
# `apt-get install postgresql`; they are found under /usr/lib/postgresql/*/bin or on
# PATH). As root, the server runs as the `postgres` user the package creates.
set -euo pipefail

usage() {
    echo "usage: $0 start|env|stop DIR" >&2
    exit 2
}
[ $# -eq 2 ] || usage
command=$1
dir=$2

# The newest installed server's programs, else whatever PATH has.
bindir=""
for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do bindir=$candidate; done
program() {
    if [ -n "$bindir" ]; then echo "$bindir/$1"; else command -v "$1" || echo "$1"; fi
}

# Runs a server program as the cluster's owner: `postgres` when we are root (the server
# refuses to run as root), ourselves otherwise; from the cluster's directory, which the
# owner can enter (the caller's may be root's own).
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then (cd "$dir" && runuser -u postgres -- "$@"); else "$@"; fi
}

case "$command" in
    start)
        if [ ! -x "$(program initdb)" ]; then
            echo "PostgreSQL's server programs are not installed (Debian: apt-get install postgresql)" >&2
            exit 1
        fi
        mkdir -p "$dir"
        dir=$(cd "$dir" && pwd)
        if [ -e "$dir/data" ]; then
            echo "$dir already holds a cluster" >&2
            exit 1
        fi
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
        user=backgroundable
        database=backgroundable_tests
        mkdir -p "$dir/socket"
        printf '%s\n' "$password" >"$dir/password"
        if [ "$(id -u)" -eq 0 ]; then
            chown -R postgres: "$dir"
            chmod 700 "$dir"
        fi
        as_owner "$(program initdb)" -D "$dir/data" -U "$user" --pwfile="$dir/password" \
            --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
            cat "$dir/initdb.log" >&2
            exit 1
        }
        # Enough connections for the suite's parallel tests, each with its own pools.
        as_owner "$(program pg_ctl)" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/socket -c max_connections=400" >/dev/null || {
            cat "$dir/server.log" >&2
            exit 1
        }
        as_owner "$(program createdb)" -h "$dir/socket" -p "$port" -U "$user" "$database"
        {
            echo "export BACKGROUNDABLE_POSTGRES_HOST=127.0.0.1"
            echo "export BACKGROUNDABLE_POSTGRES_PORT=$port"
            echo "export BACKGROUNDABLE_POSTGRES_USER=$user"
            echo "export BACKGROUNDABLE_POSTGRES_PASSWORD=$password"
            echo "export BACKGROUNDABLE_POSTGRES_DATABASE=$database"
        } >"$dir/env"
        echo "PostgreSQL $("$(program postgres)" --version | awk '{print $3}') on 127.0.0.1:$port (cluster in $dir)"
        ;;
    env)
        cat "$dir/env"
        ;;
    stop)
        if [ -f "$dir/data/postmaster.pid" ]; then
            as_owner "$(program pg_ctl)" -D "$dir/data" -m fast -w -t 60 stop >/dev/null || true
        fi
        rm -rf "$dir"
        ;;
    *) usage ;;
esac
