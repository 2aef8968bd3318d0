#!/usr/bin/env bash
# Installs the few programs the real nodes of the sandbox and the tests need
# that cannot be built from the Go module proxy: runc (cgo and libseccomp),
# iptables and nftables (kube-proxy's backends), conntrack (kube-proxy
# clears stale UDP flows with it) and the iproute2/util-linux tools the node
# runtime calls (ip, nsenter); and dash, curl, wget and netcat-openbsd's nc, which
# `make e2e-images` copies into the agnhost test image because Kubernetes'
# e2e specs run them there. Everything else is built by `make tools`.
#
# Only Debian/Ubuntu's apt is supported; on other systems the script names
# what is missing and stops. Nothing is installed when all is present, so
# it is safe to run before every `make sandbox` and `make test`.
set -euo pipefail

# program -> Debian package that provides it.
declare -A want=(
	[runc]=runc
	[iptables]=iptables
	[nft]=nftables
	[conntrack]=conntrack
	[ip]=iproute2
	[nsenter]=util-linux
	[dash]=dash
	[curl]=curl
	[wget]=wget
	[nc.openbsd]=netcat-openbsd
	[busybox]=busybox-static
)

missing=()
for prog in "${!want[@]}"; do
	if ! command -v "$prog" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$prog" ] && ! [ -x "/sbin/$prog" ]; then
		missing+=("${want[$prog]}")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing programs; install these packages (Debian names): ${missing[*]}" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
