package options_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stratus-ccm/stratus/internal/app"
	"github.com/stratus-ccm/stratus/internal/app/options"
	"github.com/stratus-ccm/stratus/internal/controllers/nodeipam"
)

// known is the daemon's controller vocabulary, as app.NewOptions gives it.
func known() []options.Controller { return app.NewOptions().Known() }

func parse(t *testing.T, args ...string) (*options.Options, error) {
	t.Helper()
	o := app.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// supportedUpstream holds a valid value for every upstream
// cloud-controller-manager flag Stratus implements.
var supportedUpstream = map[string]string{
	"allocate-node-cidrs":                          "true",
	"allow-untagged-cloud":                         "true",
	"cidr-allocator-type":                          "RangeAllocator",
	"cloud-config":                                 "/etc/cloud.conf",
	"cloud-provider":                               "localcloud",
	"cluster-cidr":                                 "10.244.0.0/16,fd00:10:244::/56",
	"cluster-name":                                 "prod",
	"configure-cloud-routes":                       "false",
	"controller-start-interval":                    "0s",
	"controllers":                                  "*,-service-lb-controller",
	"kube-api-burst":                               "50",
	"kube-api-content-type":                        "application/json",
	"kube-api-qps":                                 "40",
	"leader-elect":                                 "true",
	"leader-elect-lease-duration":                  "20s",
	"leader-elect-renew-deadline":                  "12s",
	"leader-elect-resource-lock":                   "leases",
	"leader-elect-resource-name":                   "ccm",
	"leader-elect-resource-namespace":              "infra",
	"leader-elect-retry-period":                    "3s",
	"min-resync-period":                            "6h",
	"node-monitor-period":                          "10s",
	"route-reconciliation-period":                  "30s",
	"use-service-account-credentials":              "true",
	"concurrent-node-status-updates":               "4",
	"concurrent-node-syncs":                        "3",
	"concurrent-service-syncs":                     "5",
	"concurrent-node-lifecycle-syncs":              "4",
	"bind-address":                                 "127.0.0.1",
	"cert-dir":                                     "/var/run/ccm",
	"secure-port":                                  "10300",
	"tls-cert-file":                                "/etc/tls.crt",
	"tls-private-key-file":                         "/etc/tls.key",
	"authentication-kubeconfig":                    "/etc/kubeconfig",
	"authorization-always-allow-paths":             "/healthz",
	"authorization-kubeconfig":                     "/etc/kubeconfig",
	"kubeconfig":                                   "/etc/kubeconfig",
	"master":                                       "https://10.0.0.1:6443",
	"node-status-update-frequency":                 "1m",
	"profiling":                                    "false",
	"contention-profiling":                         "true",
	"external-cloud-volume-plugin":                 "gce",
	"node-sync-period":                             "10s",
	"feature-gates":                                "CloudControllerManagerWatchBasedRoutesReconciliation=true,CloudControllerManagerWebhook=false",
	"version":                                      "false",
	"webhooks":                                     "*",
	"webhook-secure-port":                          "0",
	"webhook-bind-address":                         "127.0.0.1",
	"webhook-cert-dir":                             "/var/run/webhook",
	"webhook-disable-http2-serving":                "true",
	"webhook-tls-cipher-suites":                    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"webhook-tls-curve-preferences":                "29",
	"webhook-tls-min-version":                      "VersionTLS13",
	"disable-http2-serving":                        "true",
	"http2-max-streams-per-connection":             "100",
	"permit-address-sharing":                       "true",
	"permit-port-sharing":                          "true",
	"tls-cipher-suites":                            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"tls-curve-preferences":                        "23,29",
	"tls-min-version":                              "VersionTLS12",
	"tls-sni-cert-key":                             "/etc/sni.crt,/etc/sni.key:example.com",
	"authentication-skip-lookup":                   "true",
	"authentication-token-webhook-cache-ttl":       "30s",
	"authentication-tolerate-lookup-failure":       "true",
	"client-ca-file":                               "/etc/ca.crt",
	"requestheader-allowed-names":                  "front-proxy-client",
	"requestheader-client-ca-file":                 "/etc/front-proxy-ca.crt",
	"requestheader-extra-headers-prefix":           "X-Remote-Extra-",
	"requestheader-group-headers":                  "X-Remote-Group",
	"requestheader-username-headers":               "X-Remote-User",
	"authorization-webhook-cache-authorized-ttl":   "20s",
	"authorization-webhook-cache-unauthorized-ttl": "5s",
	"log-flush-frequency":                          "10s",
	"logging-format":                               "text",
	"v":                                            "4",
	"vmodule":                                      "run=5",
}

func TestEveryUpstreamFlagAccepted(t *testing.T) {
	var args []string
	for name, v := range supportedUpstream {
		args = append(args, "--"+name+"="+v)
	}
	o, err := parse(t, args...)
	if err != nil {
		t.Fatalf("supported upstream flags rejected: %v", err)
	}
	if o.ClusterName != "prod" || o.KubeAPIQPS != 40 || o.LeaderElectNamespace != "infra" || o.SecureServing.BindPort != 10300 {
		t.Errorf("values not applied: %+v", o)
	}
	if o.ConcurrentServiceSyncs != 5 || !o.AllocateNodeCIDRs || o.ConfigureCloudRoutes {
		t.Errorf("controller values not applied: %+v", o)
	}
}

func TestEachSupportedFlagAloneAccepted(t *testing.T) {
	for name, v := range supportedUpstream {
		t.Run(name, func(t *testing.T) {
			args := []string{"--cloud-provider=x", "--" + name + "=" + v}
			if name == "allocate-node-cidrs" {
				args = append(args, "--cluster-cidr=10.0.0.0/8")
			}
			if name == "tls-cert-file" || name == "tls-private-key-file" {
				args = append(args, "--tls-cert-file=/a", "--tls-private-key-file=/b")
			}
			if _, err := parse(t, args...); err != nil {
				t.Fatalf("--%s=%s rejected: %v", name, v, err)
			}
		})
	}
}

func TestDefaultsMatchUpstream(t *testing.T) {
	o := app.NewOptions()
	if o.LeaderElectName != "cloud-controller-manager" || o.LeaderElectNamespace != "kube-system" {
		t.Errorf("lease %s/%s", o.LeaderElectNamespace, o.LeaderElectName)
	}
	if o.LeaseDuration.String() != "15s" || o.RenewDeadline.String() != "10s" || o.RetryPeriod.String() != "2s" {
		t.Errorf("lease timings %v/%v/%v", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	if o.SecureServing.BindPort != 10258 || o.NodeMonitorPeriod.String() != "5s" || o.NodeStatusUpdateFrequency.String() != "5m0s" ||
		o.RouteReconciliationPeriod.String() != "10s" || !o.ConfigureCloudRoutes || o.AllocateNodeCIDRs ||
		o.KubeAPIQPS != 20 || o.KubeAPIBurst != 30 || o.ClusterName != "kubernetes" {
		t.Errorf("defaults differ from upstream: %+v", o)
	}
}

func TestBadValuesRejected(t *testing.T) {
	cases := map[string][]string{
		"kube-api-qps=-1":                      {"--kube-api-qps=-1"},
		"kube-api-burst=0":                     {"--kube-api-burst=0"},
		"controllers=nope":                     {"--controllers=nope"},
		"controllers=-nope":                    {"--controllers=*,-nope"},
		"cluster-cidr=10.0.0.1/8":              {"--cluster-cidr=10.0.0.1/8"},
		"cluster-cidr=banana":                  {"--cluster-cidr=banana"},
		"cluster-cidr=10.0.0.0/8,11.0.0.0/8":   {"--cluster-cidr=10.0.0.0/8,11.0.0.0/8"},
		"allocate-node-cidrs":                  {"--allocate-node-cidrs", "--controllers=node-ipam"},
		"leader-elect-lease-duration=5s":       {"--leader-elect-lease-duration=5s"},
		"leader-elect-resource-lock=endpoints": {"--leader-elect-resource-lock=endpoints"},
		"node-monitor-period=0s":               {"--node-monitor-period=0s"},
		"concurrent-service-syncs=0":           {"--concurrent-service-syncs=0"},
		"concurrent-node-lifecycle-syncs=0":    {"--concurrent-node-lifecycle-syncs=0"},
		"secure-port=70000":                    {"--secure-port=70000"},
		"bind-address=nowhere":                 {"--bind-address=nowhere"},
		"cidr-allocator-type=IPAMFromCloud":    {"--cidr-allocator-type=IPAMFromCloud"},
		"cloud-api-qps=-2":                     {"--cloud-api-qps=-2"},
		"feature-gates=NoSuchGate=true":        {"--feature-gates=NoSuchGate=true"},
		"tls-min-version=VersionTLS99":         {"--tls-min-version=VersionTLS99"},
		"tls-cipher-suites=TLS_NOPE":           {"--tls-cipher-suites=TLS_NOPE"},
		"webhook-tls-min-version=v1":           {"--webhook-tls-min-version=v1"},
		"webhooks=ValidateNodes":               {"--webhooks=ValidateNodes"},
		"webhook-secure-port=10258":            {"--webhook-secure-port=10258", "--webhooks=*"},
		"logging-format=yaml":                  {"--logging-format=yaml"},
		"version=v1.2.3":                       {"--version=v1.2.3"},
		"kube-api-content-type=text/plain":     {"--kube-api-content-type=text/plain"},
		"node-cidr-mask-size-ipv4=40":          {"--node-cidr-mask-size-ipv4=40"},
		"tls-cert-file=a":                      {"--tls-cert-file=a"},
		"load-balancer-targets=pods":           {"--load-balancer-targets=pods"},
	}
	for want, args := range cases {
		t.Run(want, func(t *testing.T) {
			_, err := parse(t, append([]string{"--cloud-provider=x"}, args...)...)
			if err == nil {
				t.Fatalf("%v accepted", args)
			}
			flag := "--" + strings.SplitN(want, "=", 2)[0]
			if !strings.Contains(err.Error(), flag) {
				t.Fatalf("error does not name %s: %v", flag, err)
			}
		})
	}
}

// TestCIDRAllocatorTypes: upstream's two values are accepted.
func TestCIDRAllocatorTypes(t *testing.T) {
	for _, v := range []string{options.RangeAllocator, options.CloudAllocator} {
		if _, err := parse(t, "--cloud-provider=x", "--cidr-allocator-type="+v); err != nil {
			t.Errorf("--cidr-allocator-type=%s: %v", v, err)
		}
	}
}

func TestMalformedValueNamesFlag(t *testing.T) {
	_, err := parse(t, "--kube-api-qps=fast")
	if err == nil || !strings.Contains(err.Error(), "kube-api-qps") || !strings.Contains(err.Error(), "fast") {
		t.Fatalf("got %v", err)
	}
	_, err = parse(t, "--no-such-flag=1")
	if err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("got %v", err)
	}
}

func TestMissingCloudProvider(t *testing.T) {
	_, err := parse(t)
	if err == nil || !strings.Contains(err.Error(), "--cloud-provider") {
		t.Fatalf("got %v", err)
	}
}

func TestResolveControllers(t *testing.T) {
	cases := []struct {
		spec []string
		want string
	}{
		{[]string{"*"}, "cloud-node-controller,cloud-node-lifecycle-controller,service-lb-controller,node-route-controller"},
		{[]string{"*", "-route"}, "cloud-node-controller,cloud-node-lifecycle-controller,service-lb-controller"},
		// Node IPAM only when named, under Azure's name too.
		{[]string{"*", "node-ipam"}, strings.Join(options.Names(known()), ",")},
		{[]string{"service", "cloud-node"}, "cloud-node-controller,service-lb-controller"},
		{[]string{"nodeipam"}, "node-ipam-controller"},
	}
	for _, c := range cases {
		got, err := options.ResolveControllers(c.spec, known())
		if err != nil {
			t.Fatalf("%v: %v", c.spec, err)
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%v: got %v, want %s", c.spec, got, c.want)
		}
	}
}

// TestLateFailuresCaughtBeforeLeadership covers settings that used to pass
// validation and fail only later: every Service (cluster name), the
// leader's allocator after the lease (mask size), or nothing at all
// (-x,x). All of them are reported in one error.
func TestLateFailuresCaughtBeforeLeadership(t *testing.T) {
	cases := map[string][]string{
		"--cluster-name=Prod_1":        {"--cluster-name=Prod_1"},
		"--node-cidr-mask-size-ipv4=8": {"--allocate-node-cidrs", "--controllers=*,node-ipam", "--cluster-cidr=10.0.0.0/16", "--node-cidr-mask-size-ipv4=8"},
		"--node-cidr-mask-size-ipv6=40": {"--allocate-node-cidrs", "--controllers=*,node-ipam", "--cluster-cidr=10.0.0.0/16,fd00::/48",
			"--node-cidr-mask-size-ipv6=40"},
		"--node-cidr-mask-size=24":                     {"--allocate-node-cidrs", "--controllers=*,node-ipam", "--cluster-cidr=10.0.0.0/16,fd00::/48", "--node-cidr-mask-size=24"},
		"--controllers=-service,service-lb-controller": {"--controllers=-service,service-lb-controller"},
		// The allocator would refuse it on the leader: no pod CIDR is left.
		"--service-cluster-ip-range=10.0.0.0/8": {"--allocate-node-cidrs", "--controllers=*,node-ipam", "--cluster-cidr=10.0.0.0/16", "--service-cluster-ip-range=10.0.0.0/8"},
	}
	var all []string
	for want, args := range cases {
		t.Run(want, func(t *testing.T) {
			_, err := parse(t, append([]string{"--cloud-provider=x"}, args...)...)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v: got %v, want an error naming %s", args, err, want)
			}
		})
		// These share flags with --node-cidr-mask-size-ipv4=8, whose error
		// comes first.
		if want != "--node-cidr-mask-size=24" && want != "--node-cidr-mask-size-ipv6=40" && want != "--service-cluster-ip-range=10.0.0.0/8" {
			all = append(all, args...)
		}
	}
	_, err := parse(t, append([]string{"--cloud-provider=x"}, all...)...)
	for _, want := range []string{"--cluster-name=Prod_1", "--node-cidr-mask-size-ipv4=8", "--controllers="} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("all at once: %v does not name %s", err, want)
		}
	}
}

func TestClusterCIDRWithoutAllocationWarns(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x", "--cluster-cidr=10.0.0.0/16", "--configure-cloud-routes=false")
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Warnings(); len(w) != 1 || !strings.Contains(w[0], "--cluster-cidr=10.0.0.0/16") {
		t.Fatalf("warnings: %q", w)
	}
	// It scopes the routes, as upstream's route controller uses it.
	o, err = parse(t, "--cloud-provider=x", "--cluster-cidr=10.0.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Warnings(); len(w) != 0 {
		t.Fatalf("warnings with --configure-cloud-routes: %q", w)
	}
	o, err = parse(t, "--cloud-provider=x", "--cluster-cidr=10.0.0.0/16", "--allocate-node-cidrs", "--configure-cloud-routes=false")
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Warnings(); len(w) != 0 {
		t.Fatalf("warnings with --allocate-node-cidrs: %q", w)
	}
}

// Upstream's app has no node IPAM: --allocate-node-cidrs=true alone, as
// hcloud's networks manifest passes it (kube-controller-manager allocating),
// neither starts an allocator nor needs the allocator's flags.
func TestAllocateNodeCIDRsAloneIsNotIPAM(t *testing.T) {
	o, err := parse(t, "--cloud-provider=x", "--allocate-node-cidrs")
	if err != nil {
		t.Fatalf("--allocate-node-cidrs without --cluster-cidr, as upstream accepts it: %v", err)
	}
	got, err := options.ResolveControllers(o.Controllers, known())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got, nodeipam.ControllerName) {
		t.Errorf("--allocate-node-cidrs with --controllers=%v enables %v", o.Controllers, got)
	}
	for _, spec := range [][]string{{"node-ipam"}, {"*", "nodeipam"}, {"node-ipam-controller"}} {
		if !options.IPAMEnabled(spec, known()) {
			t.Errorf("--controllers=%v: IPAM not enabled", spec)
		}
	}
	for _, spec := range [][]string{{"*"}, {"*", "node-ipam", "-node-ipam-controller"}, {"route"}} {
		if options.IPAMEnabled(spec, known()) {
			t.Errorf("--controllers=%v: IPAM enabled", spec)
		}
	}
	_, err = parse(t, "--cloud-provider=x", "--allocate-node-cidrs", "--controllers=*,node-ipam")
	if err == nil || !strings.Contains(err.Error(), "--cluster-cidr") {
		t.Errorf("node IPAM asked for without --cluster-cidr: %v", err)
	}
}

// A service range inside the cluster CIDR is accepted, as upstream's node
// IPAM accepts it (the subnets it covers are never allocated), with a
// warning; one that leaves nothing, or lies outside, is refused or quiet.
func TestServiceRangeOverlappingClusterCIDR(t *testing.T) {
	base := []string{"--cloud-provider=x", "--allocate-node-cidrs", "--controllers=*,node-ipam", "--cluster-cidr=10.0.0.0/16,fd00::/48"}
	o, err := parse(t, append(base, "--service-cluster-ip-range=10.0.8.0/22")...)
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Warnings(); len(w) != 1 || !strings.Contains(w[0], "--service-cluster-ip-range=10.0.8.0/22 overlaps --cluster-cidr=10.0.0.0/16,fd00::/48") {
		t.Fatalf("warnings: %q", w)
	}
	o, err = parse(t, append(base, "--service-cluster-ip-range=10.96.0.0/12,fd01::/108")...)
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Warnings(); len(w) != 0 {
		t.Fatalf("warnings for disjoint ranges: %q", w)
	}
	_, err = parse(t, append(base, "--service-cluster-ip-range=10.96.0.0/12,fd00::/40")...)
	if !errors.Is(err, nodeipam.ErrOverlap) || !strings.Contains(err.Error(), "--service-cluster-ip-range=10.96.0.0/12,fd00::/40") {
		t.Fatalf("an IPv6 service range covering the IPv6 cluster CIDR: %v", err)
	}
}

// The help of the delegated authentication and authorization kubeconfig
// flags says what an empty value does here: the daemon's own kubeconfig,
// not upstream's anonymous or forbidden requests.
func TestDelegationKubeconfigHelpSaysFallback(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	app.NewOptions().AddFlags(fs)
	for _, name := range []string{"authentication-kubeconfig", "authorization-kubeconfig"} {
		usage := fs.Lookup(name).Usage
		if !strings.Contains(usage, "--kubeconfig is used") || strings.Contains(usage, "anonymous") || strings.Contains(usage, "forbidden") {
			t.Errorf("--%s help = %q; want the fallback to --kubeconfig", name, usage)
		}
	}
}
