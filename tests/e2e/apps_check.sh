# The applications' root checked in the guest (test_apps.py runs it as a
# command job): each program starts and answers. Every step's output goes
# to $BLKLAB_OUT/<step>.txt; the first failure stops the script.
set -eu
out=$BLKLAB_OUT
run() {  # run STEP COMMAND...: COMMAND's output into STEP.txt
    step=$1
    shift
    echo "== $step at $(cut -d" " -f1 /proc/uptime) s"
    "$@" > "$out/$step.txt" 2>&1 || { echo "$step failed:"; tail -n 20 "$out/$step.txt"; exit 1; }
}
wait_for() {  # wait_for WHAT COMMAND...: up to 60 s of the guest's time
    what=$1
    shift
    i=0
    until "$@" > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -le 600 ] || { echo "$what: not ready after 60 s"; return 1; }
        sleep 0.1
    done
}

# Filesystems on the device under test, made in the guest with fixed UUIDs.
mkdir -p /data/mnt
run mkfs-ext4 mkfs.ext4 -F -U 00000000-0000-4000-8000-000000000001 \
    -E hash_seed=00000000-0000-4000-8000-000000000002,lazy_itable_init=0,lazy_journal_init=0 \
    "$BLKLAB_DEVICE"
run mount-ext4 sh -c "mount -t ext4 $BLKLAB_DEVICE /data/mnt && echo hello > /data/mnt/f && sync && cat /data/mnt/f && umount /data/mnt"
run mkfs-xfs mkfs.xfs -f -m uuid=00000000-0000-4000-8000-000000000003 "$BLKLAB_DEVICE"
run mount-xfs sh -c "mount -t xfs $BLKLAB_DEVICE /data/mnt && echo hello > /data/mnt/f && sync && cat /data/mnt/f && umount /data/mnt"

# iostat's extended statistics, one report.
run iostat iostat -x -d -o JSON
run sysbench sysbench --version

# A libbpf-tools histogram of the block layer's latency while dd reads.
biolatency -D 2 1 > "$out/biolatency.txt" 2>&1 &
bpid=$!
sleep 1
dd if="$BLKLAB_DEVICE" of=/dev/null bs=4k count=2000 iflag=direct 2> /dev/null
wait $bpid || { echo "biolatency failed:"; cat "$out/biolatency.txt"; exit 1; }
grep -q 'usecs' "$out/biolatency.txt" || { echo "biolatency printed no histogram"; exit 1; }

# MariaDB: a data directory, the server, one query.
run mariadb-install mariadb-install-db --no-defaults --user=root --datadir=/data/mysql \
    --skip-name-resolve --skip-test-db --auth-root-authentication-method=normal
mariadbd --no-defaults --user=root --datadir=/data/mysql --socket=/run/mysqld.sock \
    --skip-networking --skip-name-resolve --pid-file=/run/mysqld.pid \
    --innodb-buffer-pool-load-at-startup=OFF --innodb-buffer-pool-dump-at-shutdown=OFF \
    > "$out/mariadbd.txt" 2>&1 &
mpid=$!
wait_for mariadb mariadb --socket=/run/mysqld.sock -e 'select 1'
run mariadb-select mariadb --socket=/run/mysqld.sock -e 'select 1 as answer'
kill $mpid
wait $mpid

# PostgreSQL as its own user: initdb, the server, pgbench's tables, 2 s of
# pgbench with the cell's seed.
pgbin=/usr/lib/postgresql/15/bin
pg() { su -s /bin/sh postgres -c "$*"; }  # busybox su: no password for root
mkdir -p /data/pg /run/pg
chown postgres:postgres /data/pg /run/pg
run initdb pg $pgbin/initdb -D /data/pg/db -U postgres --auth=trust --no-locale -E UTF8
pg $pgbin/postgres -D /data/pg/db -c listen_addresses= -c unix_socket_directories=/run/pg \
    -c jit=off > "$out/postgres.txt" 2>&1 &
wait_for postgres pg $pgbin/pg_isready -h /run/pg -U postgres
run pgbench-init pg $pgbin/pgbench -h /run/pg -U postgres -i -s 1 postgres
run pgbench pg $pgbin/pgbench -h /run/pg -U postgres -T 2 --random-seed="$BLKLAB_SEED" postgres
run postgres-stop pg $pgbin/pg_ctl -D /data/pg/db -m fast -w stop

# etcd, one member: put and get.
etcd --name n0 --data-dir /data/etcd --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster n0=http://127.0.0.1:2380 --initial-cluster-state new \
    > "$out/etcd.txt" 2>&1 &
epid=$!
wait_for etcd etcdctl --endpoints=127.0.0.1:2379 endpoint health
run etcd-put etcdctl --endpoints=127.0.0.1:2379 put blklab key-value
run etcd-get etcdctl --endpoints=127.0.0.1:2379 get blklab
kill $epid
wait $epid || true
echo "== all checks passed at $(cut -d" " -f1 /proc/uptime) s"
