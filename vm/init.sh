#!/bin/sh
# shellcheck shell=dash
# /init of the rdmapool soft-RoCE test VM: runs as PID 1 under dash (/bin/sh),
# with busybox for the other commands.
#
# Sets up the kernel RDMA stack with two soft-RoCE devices on a veth pair:
#   rxe0 on veth0, 10.99.0.1/24  (server side: RDMAPOOL_TEST_ADDR)
#   rxe1 on veth1, 10.99.0.2/24  (peer side:   RDMAPOOL_TEST_PEER_ADDR)
# Both ends are in the one network namespace; these addresses exist only in the VM.
# Then runs the command in /etc/rdmapool/cmd from /opt/bin, prints
# RDMAPOOL_VM_EXIT=<status> on a line of its own and powers off.
# Files written by run.sh: /etc/rdmapool/{modules,cmd,env}.

PATH=/opt/bin:/usr/sbin:/usr/bin:/bin:/sbin
export PATH
CONF=/etc/rdmapool
SERVER_ADDR=10.99.0.1
PEER_ADDR=10.99.0.2

say() { echo "rdmapool-vm: $*"; }

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# finish STATUS: prints the marker run.sh looks for and powers the VM off.
finish() {
	sync
	printf '\nRDMAPOOL_VM_EXIT=%s\n' "$1"
	sleep 1 # let the serial console drain before the power goes
	poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 60
}

fail() {
	say "setup failed: $*"
	finish 1
}

mount_filesystems() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	exec </dev/console >/dev/console 2>&1
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t tmpfs tmpfs /tmp
}

# load_modules inserts the modules listed in order in $CONF/modules
# (dependencies first; resolved and decompressed by run.sh).
load_modules() {
	while read -r mod; do
		[ -n "$mod" ] || continue
		insmod "/lib/modules/rdmapool/$mod.ko" || fail "insmod $mod failed"
	done <"$CONF/modules"
	mount -t configfs configfs /sys/kernel/config 2>/dev/null || true
}

set_sysctl() { echo "$2" >"/proc/sys/$1" || fail "cannot set $1=$2"; }

# setup_veth creates veth0/veth1 and lets traffic that really crosses the pair
# (source address local to the VM) through instead of dropping it as martian.
setup_veth() {
	ip link set lo up || fail "ip link set lo up"
	ip link add veth0 type veth peer name veth1 || fail "cannot create veth pair (iproute2 ip, veth.ko)"
	ip addr add "$SERVER_ADDR/24" dev veth0 || fail "ip addr add $SERVER_ADDR"
	ip addr add "$PEER_ADDR/24" dev veth1 || fail "ip addr add $PEER_ADDR"
	for ifc in all default veth0 veth1; do
		set_sysctl "net/ipv4/conf/$ifc/accept_local" 1
		set_sysctl "net/ipv4/conf/$ifc/rp_filter" 0
	done
	ip link set veth0 up || fail "ip link set veth0 up"
	ip link set veth1 up || fail "ip link set veth1 up"
	# Each end's neighbour entry for the other, filled in now: rdma_cm's
	# address resolution across the pair, when the neighbour is not yet
	# resolved, sends the ARP request but is not woken by the reply here; it
	# finishes at its own timeout (rping -I 10.99.0.2: 2.5 s with its 2 s
	# timeout), and a dial whose deadline is that timeout fails. Both MACs
	# are known, so no ARP is needed at all.
	if ! {
		ip neigh replace "$SERVER_ADDR" lladdr "$(cat /sys/class/net/veth0/address)" dev veth1 nud permanent &&
			ip neigh replace "$PEER_ADDR" lladdr "$(cat /sys/class/net/veth1/address)" dev veth0 nud permanent
	}; then
		fail "cannot add the veth pair's neighbour entries"
	fi
}

# setup_wire_routes (opt-in, RDMAPOOL_VM_WIRE_ROUTES=1) makes locally generated
# traffic to one end leave through the other end, so clients that bind no source
# address really cross the pair (rxe1 -> rxe0) instead of looping back on rxe0.
setup_wire_routes() {
	if ! {
		ip route add "$SERVER_ADDR" dev veth1 src "$PEER_ADDR" table 100 &&
			ip route add "$PEER_ADDR" dev veth0 src "$SERVER_ADDR" table 101 &&
			ip rule add pref 100 to "$SERVER_ADDR" iif lo lookup 100 &&
			ip rule add pref 101 to "$PEER_ADDR" iif lo lookup 101 &&
			ip rule add pref 1000 lookup local &&
			ip rule del pref 0 lookup local
	}; then
		fail "cannot set up wire routes"
	fi
	say "wire routes on: traffic to $SERVER_ADDR leaves via veth1, to $PEER_ADDR via veth0"
}

port_active() { rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE'; }

# setup_rxe adds rxe0/rxe1 and waits (bounded) until both ports are ACTIVE.
setup_rxe() {
	rdma link add rxe0 type rxe netdev veth0 || fail "rdma link add rxe0 failed"
	rdma link add rxe1 type rxe netdev veth1 || fail "rdma link add rxe1 failed"
	tries=0
	until port_active rxe0 && port_active rxe1; do
		tries=$((tries + 1))
		if [ "$tries" -gt 300 ]; then
			rdma link show
			fail "rxe0/rxe1 not ACTIVE after 30 s"
		fi
		sleep 0.1
	done
}

export_test_env() {
	export RDMAPOOL_VM=1
	export RDMAPOOL_TEST_ADDR="$SERVER_ADDR" RDMAPOOL_TEST_DEV=rxe0
	export RDMAPOOL_TEST_PEER_ADDR="$PEER_ADDR" RDMAPOOL_TEST_PEER_DEV=rxe1
	# A name whose first address RDMA cannot reach and whose second it
	# can: a Dial by name tries each, as net.Dial does (qp's tests).
	printf '::1\trdmapool-dual\n%s\trdmapool-dual\n' "$SERVER_ADDR" >>/etc/hosts
	export HOME=/home/rdmapool TMPDIR=/tmp
	mkdir -p "$HOME"
}

main() {
	/bin/busybox --install -s /bin # links busybox's applets; existing files stay
	mount_filesystems
	cmdline=" $(cat /proc/cmdline) "
	# vm/run.sh's accelerator probe: the guest runs; nothing more is needed.
	case $cmdline in
	*" rdmapool.probe=1 "*)
		echo RDMAPOOL_VM_PROBE_OK
		poweroff -f
		;;
	esac
	# The accelerator vm/run.sh chose (kvm or tcg), for the command to report.
	RDMAPOOL_VM_ACCEL=${cmdline##* rdmapool.accel=}
	RDMAPOOL_VM_ACCEL=${RDMAPOOL_VM_ACCEL%% *}
	case $RDMAPOOL_VM_ACCEL in kvm | tcg) ;; *) RDMAPOOL_VM_ACCEL=unknown ;; esac
	export RDMAPOOL_VM_ACCEL
	ulimit -l unlimited || fail "ulimit -l unlimited"
	# Variables from run.sh --env (validated names, quoted values).
	# shellcheck disable=SC1091 # written by run.sh
	if [ -f "$CONF/env" ]; then . "$CONF/env"; fi
	load_modules
	setup_veth
	if [ "${RDMAPOOL_VM_WIRE_ROUTES:-0}" = 1 ]; then setup_wire_routes; fi
	setup_rxe
	export_test_env
	say "ready after $(uptime_s) s ($RDMAPOOL_VM_ACCEL): rxe0 ACTIVE (veth0 $SERVER_ADDR), rxe1 ACTIVE (veth1 $PEER_ADDR)"
	cd /opt/bin || fail "no /opt/bin"
	sh "$CONF/cmd" </dev/null
	status=$?
	say "command exited with status $status at $(uptime_s) s"
	finish "$status"
}

main
