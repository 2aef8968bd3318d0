#!/usr/bin/env bash
# Runs Kubernetes' own LoadBalancer e2e specs (bin/e2e.test, v1.37.2)
# against a sandbox whose nodes are all real (kubelet, containerd and
# kube-proxy in network namespaces) with Stratus and localcloud, and writes
# what passed, failed and was skipped, and why, to $CONFORMANCE_DIR/report.md.
# `make conformance` builds what it needs first; it needs root.
#
# The provider setting is cloud-provider-kind's: --provider=aws, whose e2e
# provider does nothing, so the specs that need "a cloud with load
# balancers" run without GCE- or AWS-specific helpers. The skip list is
# theirs too, less the specs localcloud can serve; docs/kubernetes-e2e.md
# justifies every entry.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${STRATUS_BIN_DIR:-$root/bin}
out=${CONFORMANCE_DIR:-$root/_artifacts/conformance}
nodes=${CONFORMANCE_NODES:-2}
focus=${CONFORMANCE_FOCUS:-'\[Feature:LoadBalancer\]|\[sig-network\] Services .*[Ll]oad[Bb]alancer'}
# SCTP between pods needs the machine's sctp kernel module, which a
# sandbox must not load: the one SCTP spec the focus selects is about pods,
# not load balancers.
skip=${CONFORMANCE_SKIP:-'\[Feature:SCTPConnectivity\]'}
timeout=${CONFORMANCE_TIMEOUT:-3h}
# CONFORMANCE_IP_FAMILY: the sandbox's --ip-family (ipv4, dual; empty: the
# sandbox's default, dual-stack with real nodes only). `make conformance`
# runs the LoadBalancer specs on an IPv4 cluster and the dual-stack specs on
# a dual-stack one: a few LoadBalancer specs check a Service's health check
# node port on every InternalIP of a node, and kube-proxy serves an IPv4
# Service's health check on IPv4 addresses only.
family_args=()
if [ -n "${CONFORMANCE_IP_FAMILY:-}" ]; then
	family_args=("--ip-family=$CONFORMANCE_IP_FAMILY")
fi
# CONFORMANCE_CCM_ARGS: extra flags for Stratus, space-separated, e.g.
# --load-balancer-targets=endpoints for the run whose load balancers all
# target pods (docs/kubernetes-e2e.md).
ccm_args=()
for a in ${CONFORMANCE_CCM_ARGS:-}; do
	ccm_args+=("--ccm-arg=$a")
done

mkdir -p "$out"
state=$(mktemp -d /tmp/stratus-conformance.XXXXXX)
# Ports of their own, so a sandbox on the default ports can keep running.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$bin/stratus" sandbox --state-dir "$state" --bin-dir "$bin" --nodes 0 --real-nodes "$nodes" --no-demo \
	--apiserver-port "$(port)" --etcd-port "$(port)" --localcloud-port "$(port)" --ccm-port "$(port)" \
	--real-node-image "$bin/images/e2e/agnhost.tar" --real-node-image "$bin/images/e2e/pause.tar" ${ccm_args[@]+"${ccm_args[@]}"} ${family_args[@]+"${family_args[@]}"} \
	>"$out/sandbox.log" 2>&1 &
sandbox=$!
stop() {
	kill -TERM "$sandbox" 2>/dev/null || true
	wait "$sandbox" 2>/dev/null || true
	cp -r "$state/logs" "$out/sandbox-logs" 2>/dev/null || true
	rm -rf "$state"
}
trap stop EXIT
trap 'exit 143' TERM INT

for _ in $(seq 600); do
	[ -e "$state/ready" ] && break
	if ! kill -0 "$sandbox" 2>/dev/null; then
		echo "conformance: the sandbox exited before it was ready; see $out/sandbox.log" >&2
		exit 1
	fi
	sleep 1
done
[ -e "$state/ready" ] || { echo "conformance: the sandbox was not ready in 10 minutes; see $out/sandbox.log" >&2; exit 1; }

rc=0
"$bin/e2e.test" --kubeconfig="$state/kubeconfig" --provider=aws \
	--ginkgo.focus="$focus" --ginkgo.skip="$skip" --ginkgo.timeout="$timeout" --ginkgo.v \
	--report-dir="$out" --disable-log-dump=true --dump-logs-on-failure=false \
	--allowed-not-ready-nodes=0 --node-schedulable-timeout=2m \
	>"$out/e2e.log" 2>&1 || rc=$?

(cd "$root/hack/conformance" && go run ./report -junit "$out/junit_01.xml" -focus "$focus" -skip "$skip" \
	-log "$out/e2e.log" >"$out/report.md") || rc=1
cat "$out/report.md"
exit "$rc"
