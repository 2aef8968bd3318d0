# Stratus build, test and sandbox entry points. See README.md.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
export STRATUS_BIN_DIR := $(BIN)

KUBE_VERSION := v1.37.2
CONTAINERD_VERSION := v2.4.2
CNI_PLUGINS_VERSION := v1.9.1
GOLANGCI_LINT_VERSION := v2.15.0
TOOLS_MOD := hack/tools/go.mod hack/tools/go.sum
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
STRATUS_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
STRATUS_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# -s -w as Kubernetes' release builds: no symbol table or DWARF (stack
# traces come from the runtime's own tables, which stay). Measured, the
# stripped binary keeps about 10 MiB fewer of its pages resident, and is a
# third smaller.
LDFLAGS := -s -w -X github.com/stratus-ccm/stratus/internal/version.version=$(STRATUS_VERSION) \
	-X github.com/stratus-ccm/stratus/internal/version.commit=$(STRATUS_COMMIT)
# Integration and e2e tests start real control planes; -p 2 keeps at most
# two test binaries (and so two apiservers) on this 2-core machine at once.
# -vet=off: make lint vets every package of every module in full, so go
# test's own subset of vet would only run the same analyzers a second time.
TEST_FLAGS ?= -race -vet=off -p 2 -timeout 20m
# The example that links AWS' provider runs without -race: it links the
# AWS SDK's EC2 client, one of the largest Go packages there is, and
# race-instrumenting the SDK cost a cold CI run minutes for code that is
# not Stratus'. Stratus' own packages, the ones it drives there (pkg/ccm
# and the controllers), are race-tested by this module's tests.
NORACE_EXAMPLES := aws-provider
# hack/dist (chart rendering, image assembly) runs without -race: the code
# under test is sequential, and race-instrumenting Helm's tree and a second
# k8s.io version would add minutes of compiling to every CI run.
DIST_TEST_FLAGS ?= -p 2 -timeout 20m

.PHONY: all build tools test lint sandbox clean fmt manifests image

all: build

build: $(BIN)/stratus

# Always handed to go build, which is itself incremental. Static and
# path-free like the image's binary, which also lets hack/dist's image test
# reuse the packages compiled here instead of compiling the tree again.
$(BIN)/stratus: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/stratus
	ln -sf stratus $(BIN)/cloud-controller-manager

FORCE:

# tools builds only what is missing or older than hack/tools' go.mod/go.sum,
# after installing the few system programs a real node needs and Go cannot
# build (hack/install-deps.sh: runc, iptables, nftables, conntrack).
tools: deps $(BIN)/cyclonedx-gomod $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/kwok $(BIN)/upstream-ccm $(BIN)/helm node-tools skew-tools

# The real nodes' programs: kubelet, kube-proxy, kube-controller-manager and
# kube-scheduler from the same k8s.io/kubernetes as kube-apiserver,
# containerd 2 with its runc shim and ctr, the CNI plugins, and the images
# the nodes run without a registry.
KUBE_NODE_CMDS := kubelet kube-proxy kube-controller-manager kube-scheduler
node-tools: $(addprefix $(BIN)/,$(KUBE_NODE_CMDS)) $(BIN)/containerd $(BIN)/cni/bridge images $(BIN)/images/coredns.tar

.PHONY: deps node-tools images
deps:
	hack/install-deps.sh

# upstream-ccm is upstream's cloud-controller-manager (k8s.io/cloud-provider's
# app) linked with the localcloud provider: the incumbent of the takeover and
# leader migration tests, and the benchmark peer; and with the vendor doubles
# (test/vendors/profile), the peer of the vendor profile tests. bench/ is its own module; it
# links this module's provider, so provider changes rebuild it too.
UPSTREAM_CCM_SRC := go.mod bench/go.mod bench/go.sum $(wildcard bench/cmd/upstream-ccm/*.go) \
	$(shell find pkg/providers/localcloud pkg/localcloud/api pkg/localcloud/client pkg/cloud internal/observe test/vendors/profile -name '*.go' -not -name '*_test.go' 2>/dev/null)
$(BIN)/upstream-ccm: $(UPSTREAM_CCM_SRC) | $(TOOLS_BINS)
	cd bench && $(GO) build -ldflags "-s -w $(KUBE_LDFLAGS)" -o $@ ./cmd/upstream-ccm

# One go build for every program of hack/tools: the Kubernetes programs
# and kwok share most of their packages, and one go command compiles each
# package once and links the programs side by side, where separate builds
# running as parallel make jobs would each compile the shared packages
# again. kwok is built in hack/tools (its version is hack/tools' go.mod's)
# so that it compiles against the test bed's own client-go rather than a
# module graph of its own: on a cold machine that was minutes of compiling
# Kubernetes' libraries a second time.
KUBE_CMDS := kube-apiserver $(KUBE_NODE_CMDS)
TOOLS_BINS := $(addprefix $(BIN)/,$(KUBE_CMDS) etcd kwok)
$(TOOLS_BINS) &: $(TOOLS_MOD) hack/tools/etcd/main.go
	mkdir -p $(BIN)
	cd hack/tools && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ $(addprefix k8s.io/kubernetes/cmd/,$(KUBE_CMDS)) sigs.k8s.io/kwok/cmd/kwok ./etcd

# containerd and the CNI plugins install as their own modules (no replace
# lines), static: no cgo, and no btrfs snapshotter, which needs C headers.
# Each version's stamp file makes a bump rebuild it and nothing else.
$(BIN)/containerd: $(BIN)/.containerd-$(CONTAINERD_VERSION)

$(BIN)/.containerd-$(CONTAINERD_VERSION):
	GOBIN=$(BIN) CGO_ENABLED=0 $(GO) install -tags no_btrfs \
		-ldflags "-X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)" \
		$(foreach c,containerd containerd-shim-runc-v2 ctr,github.com/containerd/containerd/v2/cmd/$(c)@$(CONTAINERD_VERSION))
	touch $@

$(BIN)/cni/bridge: $(BIN)/cni/.plugins-$(CNI_PLUGINS_VERSION)

$(BIN)/cni/.plugins-$(CNI_PLUGINS_VERSION):
	mkdir -p $(BIN)/cni
	GOBIN=$(BIN)/cni CGO_ENABLED=0 $(GO) install \
		$(foreach p,main/bridge main/loopback ipam/host-local meta/portmap,github.com/containernetworking/plugins/plugins/$(p)@$(CNI_PLUGINS_VERSION))
	touch $@

# images: the pause (pod sandbox) and demo images as image tarballs for
# `ctr images import`, built from hack/images (a module of its own).
IMAGES_SRC := hack/images/go.mod hack/images/go.sum $(shell find hack/images -name '*.go' -not -name '*_test.go' 2>/dev/null)
IMAGE_NAMES := pause demo
images: $(foreach i,$(IMAGE_NAMES),$(BIN)/images/$(i).tar)

$(BIN)/images/%.tar: $(IMAGES_SRC)
	mkdir -p $(BIN)/images
	cd hack/images && CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/images/$* ./$* && \
		$(GO) run ./cmd/ociimage -binary $(BIN)/images/$* -tag stratus.local/$*:v1 -out $@

# coredns is the real nodes' cluster DNS (kube-system/kube-dns): CoreDNS
# with only the plugins a cluster's DNS needs, from hack/tools/coredns, a
# module of its own so that CoreDNS' dependencies never move the versions
# kube-apiserver and the kubelet are built with; static, like the images.
COREDNS_SRC := hack/tools/coredns/go.mod hack/tools/coredns/go.sum hack/tools/coredns/main.go
$(BIN)/coredns: $(COREDNS_SRC)
	cd hack/tools/coredns && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ .

$(BIN)/images/coredns.tar: $(BIN)/coredns $(IMAGES_SRC)
	mkdir -p $(BIN)/images
	cd hack/images && $(GO) run ./cmd/ociimage -binary $(BIN)/coredns -tag stratus.local/coredns:v1 -out $@

# skew-tools: the oldest kube-apiserver the version-skew policy supports,
# one minor before the test bed's (docs/providers.md, "Kubernetes
# versions"), for test/daemon's TestOldestSupportedAPIServer.
# hack/tools/skew is a module of its own that pins k8s.io/kubernetes at
# SKEW_KUBE_VERSION and every staging module at the matching v0.x, so the
# binary is rebuilt only when that go.mod/go.sum changes. Its etcd is the
# test bed's: Stratus never talks to etcd, and etcd v3.7 serves the v3.6
# client a 1.36 kube-apiserver links.
SKEW_KUBE_VERSION := v1.36.3
SKEW_MOD := hack/tools/skew/go.mod hack/tools/skew/go.sum
SKEW_BIN := $(BIN)/skew/$(SKEW_KUBE_VERSION)
SKEW_KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(SKEW_KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(SKEW_KUBE_VERSION)))

.PHONY: skew-tools
skew-tools: $(SKEW_BIN)/kube-apiserver $(SKEW_BIN)/etcd

$(SKEW_BIN)/kube-apiserver: $(SKEW_MOD)
	@grep -q '^require k8s.io/kubernetes $(SKEW_KUBE_VERSION)$$' hack/tools/skew/go.mod || \
		{ echo "hack/tools/skew/go.mod does not pin k8s.io/kubernetes $(SKEW_KUBE_VERSION) (SKEW_KUBE_VERSION)"; exit 1; }
	mkdir -p $(SKEW_BIN)
	cd hack/tools/skew && $(GO) build -ldflags "$(SKEW_KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(SKEW_BIN)/etcd: $(BIN)/etcd
	mkdir -p $(SKEW_BIN)
	ln -sf ../../etcd $@

# helm, the CLI an operator installs the chart with: test/vendors installs
# the chart with it beside another release. It is built from hack/dist
# (hack/dist/tools.go pins it), at the Helm SDK version that module renders
# and lints the chart with, and so from the packages hack/dist's tests
# compile too.
$(BIN)/helm: hack/dist/go.mod hack/dist/go.sum
	cd hack/dist && $(GO) build -o $@ helm.sh/helm/v3/cmd/helm

# e2e.test is Kubernetes' own end-to-end suite (go test -c of
# k8s.io/kubernetes/test/e2e at the version hack/conformance pins, with the
# same replace lines as hack/tools), for running its LoadBalancer specs
# against Stratus. It is large (about 200 MB, several minutes cold), so
# only what runs it depends on it.
.PHONY: e2e-test
e2e-test: $(BIN)/e2e.test

# hack/conformance requires every module it shares with hack/tools at
# hack/tools' version (TestModulesMatchTools checks), so e2e.test
# and agnhost reuse the packages the test bed's programs compiled; they are
# built after them (order-only) rather than beside them, which would compile
# those packages twice at once.
$(BIN)/e2e.test: hack/conformance/go.mod hack/conformance/go.sum | $(TOOLS_BINS)
	cd hack/conformance && $(GO) test -c -o $@ -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/test/e2e

# e2e-images: the test images the LoadBalancer specs run, under the names
# e2e.test asks for (imagePullPolicy IfNotPresent finds them imported):
# agnhost, built from k8s.io/kubernetes/test/images/agnhost at the version
# hack/conformance pins, beside the machine's dash (as /bin/sh), curl, wget
# and netcat-openbsd's nc and grep with their libraries, which the specs run
# in it as upstream's Alpine-based image has them, busybox-static's applets
# for every other command (sleep, cat, ...), as Alpine's busybox gives them,
# and upstream's default
# argument, pause (a pod of agnhost without arguments runs and waits); and
# the pause image under upstream's name.
AGNHOST_IMAGE := registry.k8s.io/e2e-test-images/agnhost:2.66.1
PAUSE_IMAGE := registry.k8s.io/pause:3.10.2
.PHONY: e2e-images
e2e-images: $(BIN)/images/e2e/agnhost.tar $(BIN)/images/e2e/pause.tar

# agnhost is built with the machine's defaults (cgo, full paths), as e2e.test
# and the test bed's programs are, so it compiles little of its own; the
# image brings the libraries ldd names for it.
$(BIN)/images/e2e/agnhost.tar: hack/conformance/go.mod hack/conformance/go.sum $(IMAGES_SRC) hack/images/e2e/wgetrc | $(TOOLS_BINS)
	mkdir -p $(BIN)/images/e2e
	cd hack/conformance && $(GO) build -o $(BIN)/images/e2e/agnhost k8s.io/kubernetes/test/images/agnhost
	cd hack/images && $(GO) run ./cmd/ociimage -binary $(BIN)/images/e2e/agnhost -tag $(AGNHOST_IMAGE) -out $@ \
		-add /bin/dash -link /bin/sh=dash -add /usr/bin/curl -add /usr/bin/wget -add $(CURDIR)/hack/images/e2e/wgetrc=/etc/wgetrc -add /usr/bin/nc.openbsd=/usr/bin/nc \
		-add /usr/bin/grep -busybox /bin/busybox -arg pause

$(BIN)/images/e2e/pause.tar: $(BIN)/images/pause.tar
	mkdir -p $(BIN)/images/e2e
	cd hack/images && $(GO) run ./cmd/ociimage -binary $(BIN)/images/pause -tag $(PAUSE_IMAGE) -out $@

# conformance runs Kubernetes' LoadBalancer e2e specs against a sandbox of
# real nodes only, IPv4, with Stratus and localcloud, then the dual-stack
# specs against a dual-stack one, and writes _artifacts/conformance/report.md
# and dualstack/report.md (hack/conformance/run.sh). With CONFORMANCE_FOCUS
# set it runs that focus once (CONFORMANCE_SKIP, CONFORMANCE_IP_FAMILY,
# CONFORMANCE_CCM_ARGS as run.sh reads them).
.PHONY: conformance
conformance: tools build e2e-test e2e-images
	@if [ -n "$$CONFORMANCE_FOCUS" ]; then hack/conformance/run.sh; else rc=0; \
		CONFORMANCE_IP_FAMILY=$${CONFORMANCE_IP_FAMILY:-ipv4} hack/conformance/run.sh || rc=1; \
		CONFORMANCE_DIR=$${CONFORMANCE_DIR:-$(CURDIR)/_artifacts/conformance}/dualstack CONFORMANCE_IP_FAMILY=dual \
			CONFORMANCE_FOCUS='\[Feature:IPv6DualStack\]' hack/conformance/run.sh || rc=1; exit $$rc; fi

$(BIN)/golangci-lint:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# Modules of their own that build against this one through a replace:
# provider authors' examples, each with its own test.
EXAMPLES := examples/fake-provider examples/aws-provider

# test: unit and integration tests against the real apiserver, with -race,
# each example module's tests, and the benchmark runner's tests (its
# analysis and report, and that a failed or killed run leaves no process).
# e2e.test and its images are there for test/e2e's TestConformanceSubset, two
# of Kubernetes' LoadBalancer specs (make conformance runs them all).
# The parts run side by side as make jobs: the integration tests mostly wait
# on control planes and real nodes, which leaves CPU for the others, and
# test/e2e, the longest package, starts at once instead of last.
TEST_PARTS := test-main test-e2e test-dist test-images test-bench $(addprefix test-example-,$(notdir $(EXAMPLES)))
.PHONY: $(TEST_PARTS)
test: tools build e2e-test e2e-images
	$(MAKE) --no-print-directory test-deps
	$(MAKE) --no-print-directory -j$(words $(TEST_PARTS)) $(TEST_PARTS)

# test-deps compiles, once, the race-built packages the -race parts import
# (the standard library, client-go, controller-runtime, the AWS SDK...).
# Without it, on a cold cache, the parts started side by side each compile
# the same packages at the same time in their own go process: the build
# cache shares finished compiles, not compiles in flight. Warm, it is a
# cache check of a few seconds per module.
.PHONY: test-deps
test-deps:
	@for m in . bench $(filter-out $(addprefix examples/,$(NORACE_EXAMPLES)),$(EXAMPLES)); do \
		echo "race-compiling the packages $$m's tests import"; \
		(cd $$m && $(GO) build -race $$($(GO) list -deps -test -f '{{if and (ne .Name "main") .GoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v ' ')) || exit 1; \
	done

test-main:
	$(GO) test $(TEST_FLAGS) $$($(GO) list ./... | grep -v '/test/e2e$$')
test-e2e:
	$(GO) test $(TEST_FLAGS) -timeout 30m ./test/e2e
test-dist:
	cd hack/dist && $(GO) test $(DIST_TEST_FLAGS) ./...
test-images:
	cd hack/images && $(GO) test $(DIST_TEST_FLAGS) ./...
test-bench:
	cd bench && $(GO) test $(TEST_FLAGS) ./...
$(addprefix test-example-,$(notdir $(EXAMPLES))): test-example-%:
	cd examples/$* && $(GO) test $(if $(filter $*,$(NORACE_EXAMPLES)),$(filter-out -race,$(TEST_FLAGS)),$(TEST_FLAGS)) ./...

# unit: the unit tests alone (-short), which need no test bed and no bin/;
# each integration test says, as it skips, that it needs `make tools`.
.PHONY: unit
unit:
	$(GO) test -short $(TEST_FLAGS) ./...

# golangci-lint holds a machine-wide lock; a second run on the same machine
# waits for it rather than failing.
LINT := $(BIN)/golangci-lint run --allow-serial-runners

# logcheck is Kubernetes' check for contextual logging (klog.FromContext,
# never the global klog functions), run as a vet-style analyzer from the
# module proxy at a pinned version; it is not a dependency of the module.
LOGCHECK := sigs.k8s.io/logtools/logcheck@v0.11.0

lint: $(BIN)/golangci-lint
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(LINT) ./...
	$(GO) run $(LOGCHECK) -check-contextual ./...
	cd hack/dist && $(GO) vet ./... && $(LINT) ./...
	cd hack/images && $(GO) mod tidy -diff && $(GO) vet ./... && $(LINT) ./...
	cd bench && $(GO) mod tidy -diff && $(GO) vet ./... && $(LINT) ./...
	@# An example requires this module through a replace, so a dependency
	@# added here must reach its go.sum too: run go mod tidy in it.
	for m in $(EXAMPLES); do (cd $$m && $(GO) mod tidy -diff && $(GO) vet ./... && $(LINT) ./...) || exit 1; done

fmt:
	gofmt -w $$(git ls-files '*.go')

# manifests: write the daemon's controller table into the chart
# (charts/stratus/files/controllers.yaml: names, aliases, ServiceAccounts,
# RBAC; the chart names no controller itself), then render charts/stratus
# into the plain manifests in deploy/ (hack/dist is its own module, so the
# binary does not link Helm).
manifests:
	$(GO) run ./hack/controllertable -chart charts/stratus
	cd hack/dist && $(GO) run ./cmd/manifests -chart ../../charts/stratus -out ../../deploy

# image: the OCI image of bin/stratus for IMAGE_PLATFORMS, built without a
# container engine (hack/dist/image): an OCI layout in $(IMAGE_DIR)/oci and a
# docker-archive of the host's platform to docker/podman load. Its
# entrypoint is the daemon (cloud-controller-manager), so manifests that set
# only args start it; /usr/local/bin/stratus is the full command line. It is
# tagged with the chart's appVersion, the tag the chart pulls by default
# (IMAGE_TAG overrides it; the version label stays git describe's).
IMAGE_REPOSITORY ?= ghcr.io/stratus-ccm/stratus
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *//p' charts/stratus/Chart.yaml)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_DIR ?= $(BIN)/image
image:
	cd hack/dist && $(GO) run ./cmd/image -module-dir ../.. -package ./cmd/stratus \
		-alias cloud-controller-manager -entrypoint cloud-controller-manager \
		-platforms $(IMAGE_PLATFORMS) -ldflags "$(LDFLAGS)" -version $(STRATUS_VERSION) -revision $(STRATUS_COMMIT) \
		-source https://github.com/stratus-ccm/stratus -repository $(IMAGE_REPOSITORY) -tag $(IMAGE_TAG) -out $(IMAGE_DIR)

sandbox: tools build
	$(BIN)/stratus sandbox $(SANDBOX_FLAGS)

clean:
	rm -rf $(BIN)

# bench: Stratus against the upstream cloud-controller-manager (bench/ is
# its own module). Regenerates docs/benchmarks.md between its markers, the
# charts in docs/benchmarks/ and bench/results/*.json. BENCH_QUICK=1 is a
# smoke run; BENCH_SCENARIOS=nodeinit,lb,steady,failover selects scenarios.
.PHONY: bench
bench: tools build
	cd bench && $(GO) build -o $(BIN)/bench ./cmd/bench
	$(BIN)/bench -root $(CURDIR) -bin $(BIN)

# bench-dataplane: localcloud's load-balancer data planes (pass-through,
# proxy, PROXY protocol) on the sandbox's real nodes against the floor, a
# node port hit directly; needs root. DATAPLANE_BENCH_FLAGS passes -nodes,
# -conns, -duration, -warmup. Prints the table docs/benchmarks.md shows.
.PHONY: bench-dataplane
bench-dataplane: tools build e2e-images
	cd bench && $(GO) build -o $(BIN)/dataplane-bench ./cmd/dataplane
	$(BIN)/dataplane-bench -bin $(BIN) $(DATAPLANE_BENCH_FLAGS)

# bench-rolling: rolling updates of a Deployment behind a load balancer with
# node targets and one with endpoint targets, on the sandbox's real nodes:
# failed requests, cloud calls per rolling update and per second of churn,
# and a new pod's readiness to its first request through the VIP; needs
# root. ROLLING_BENCH_FLAGS passes -replicas, -rollouts, -rate, -drain,
# -node-targets, -endpoint-targets. Prints the table docs/benchmarks.md shows.
.PHONY: bench-rolling
bench-rolling: tools build
	cd bench && $(GO) build -o $(BIN)/rolling-bench ./cmd/rollbench
	$(BIN)/rolling-bench -bin $(BIN) $(ROLLING_BENCH_FLAGS)

# ---------------------------------------------------------------------------
# Releases (docs/versioning.md, docs/install.md#installing-a-release).
#
# release: `make release VERSION=vX.Y.Z` builds, from the commit HEAD alone
# (a git archive, whatever the work tree holds), into $(RELEASE_DIR)/VERSION:
# the image for IMAGE_PLATFORMS (OCI layout and a tarball per platform), the
# stratus binaries, the chart packaged at that version, the manifests with the
# image pinned by digest, a CycloneDX SBOM per platform, the release notes
# from CHANGELOG.md and SHA256SUMS (hack/dist/cmd/release). A malformed
# VERSION, or one CHANGELOG.md has no section for, is refused. Two runs of one
# commit give the same bytes.
RELEASE_DIR ?= _release
RELEASE_COMMIT ?= HEAD
RELEASE_MOD := hack/release/go.mod hack/release/go.sum
.PHONY: release api-check api-baseline lint-release
release: $(BIN)/cyclonedx-gomod
	cd hack/dist && $(GO) run ./cmd/release -root ../.. -commit $(RELEASE_COMMIT) -version "$(VERSION)" \
		-out $(abspath $(RELEASE_DIR)) -repository $(IMAGE_REPOSITORY) -platforms $(IMAGE_PLATFORMS) \
		-sbom-tool $(BIN)/cyclonedx-gomod -record $(CURDIR)/hack/release/last-release

# cyclonedx-gomod writes the SBOM; hack/release is a module of its own that
# pins it, so that its dependencies never move hack/dist's versions.
$(BIN)/cyclonedx-gomod: $(RELEASE_MOD)
	cd hack/release && $(GO) build -trimpath -o $@ github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod

# api-check: what apidiff sees changed in pkg/'s exported API since the last
# release's record, and what CHANGELOG.md's Unreleased section does not
# declare (the same check is a test in make test's test-dist part).
# api-baseline: record HEAD's API as release VERSION's (a step of cutting a
# release; docs/versioning.md).
api-check:
	cd hack/dist && $(GO) run ./cmd/api -root ../..
api-baseline:
	cd hack/dist && $(GO) run ./cmd/api -root ../.. -record "$(VERSION)" -commit $(RELEASE_COMMIT)

lint: lint-release
lint-release:
	cd hack/release && $(GO) mod tidy -diff
