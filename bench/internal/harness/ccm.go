package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Contestant is one controller manager configuration under test.
type Contestant struct {
	// Name is the short id used in results and file names.
	Name string
	// Label is the human name in the report.
	Label string
	// Binary is the file in the bin dir; Subcommand precedes the flags.
	Binary     string
	Subcommand string
	// Args are the contestant's own flags.
	Args []string
}

// Contestant names.
const (
	Upstream      = "upstream"
	UpstreamTuned = "upstream-tuned"
	StratusStd    = "stratus-std"
	Stratus       = "stratus"
)

// Contestants returns the four configurations of the issue: upstream at
// its defaults, upstream with Stratus' worker counts, Stratus restricted to
// the standard cloudprovider.Interface, and Stratus as shipped.
func Contestants() []Contestant {
	return []Contestant{
		{Name: Upstream, Label: "upstream (defaults)", Binary: "upstream-ccm"},
		{Name: UpstreamTuned, Label: "upstream (tuned: 10 node / 10 service workers)", Binary: "upstream-ccm",
			Args: []string{"--concurrent-node-syncs=10", "--concurrent-service-syncs=10"}},
		{Name: StratusStd, Label: "Stratus (--cloud-extensions=false)", Binary: "stratus", Subcommand: "controller-manager",
			Args: []string{"--cloud-extensions=false"}},
		{Name: Stratus, Label: "Stratus (as shipped)", Binary: "stratus", Subcommand: "controller-manager"},
	}
}

// CCMOptions are the flags every contestant shares.
type CCMOptions struct {
	KubeAPIQPS, KubeAPIBurst int
	// LeaseDuration is left at the default (15s) when zero.
	LeaseDuration time.Duration
}

// CCM is a running controller manager.
type CCM struct {
	*Proc
	Port    int
	cluster *Cluster
}

// StartCCM starts one replica of c against the cluster. Every contestant
// gets the same kube-api limits, leader election, cluster name and serving
// setup; routes and IPAM stay off, as the upstream app has no IPAM.
func (cl *Cluster) StartCCM(c Contestant, replica string, o CCMOptions) (*CCM, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cl.Dir, "ccm-"+c.Name+"-"+replica)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	var args []string
	if c.Subcommand != "" {
		args = append(args, c.Subcommand)
	}
	args = append(args,
		"--cloud-provider=localcloud",
		"--cloud-config="+cl.CloudConfig,
		"--kubeconfig="+cl.Kubeconfig,
		"--authentication-kubeconfig="+cl.Kubeconfig,
		"--authorization-kubeconfig="+cl.Kubeconfig,
		"--kube-api-qps="+strconv.Itoa(o.KubeAPIQPS),
		"--kube-api-burst="+strconv.Itoa(o.KubeAPIBurst),
		"--leader-elect=true",
		"--cluster-name="+ClusterName,
		"--allocate-node-cidrs=false",
		"--configure-cloud-routes=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+dir,
		"--v=1",
	)
	if o.LeaseDuration > 0 {
		args = append(args, "--leader-elect-lease-duration="+o.LeaseDuration.String())
	}
	args = append(args, c.Args...)
	p, err := StartProc(c.Name+"-"+replica, cl.logFile("ccm-"+c.Name+"-"+replica), filepath.Join(cl.BinDir, c.Binary), args...)
	if err != nil {
		return nil, err
	}
	return &CCM{Proc: p, Port: port, cluster: cl}, nil
}

// LeaseName and LeaseNamespace are both contestants' leader election
// defaults.
const (
	LeaseName      = "cloud-controller-manager"
	LeaseNamespace = "kube-system"
)

// LeaseHolder returns the current holder of the leader Lease ("" if none).
func (cl *Cluster) LeaseHolder(ctx context.Context) (string, error) {
	l, err := cl.Kube.CoordinationV1().Leases(LeaseNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("harness: get lease: %w", err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// WaitLeading waits until some replica holds the Lease and returns its
// identity; it fails at once when a listed process dies.
func (cl *Cluster) WaitLeading(ctx context.Context, timeout time.Duration, procs ...*CCM) (string, error) {
	var holder string
	err := Poll(ctx, 100*time.Millisecond, timeout, "a controller manager to lead", func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if p.Exited() {
				return false, fmt.Errorf("%s exited: %w (see %s)", p.Name, p.ExitError(), p.Log)
			}
		}
		h, err := cl.LeaseHolder(ctx)
		if err != nil {
			return false, nil
		}
		holder = h
		return h != "", nil
	})
	return holder, err
}

// ScrapeToken creates a ServiceAccount allowed to GET /metrics and returns
// a token for it: both contestants authenticate scrapes with TokenReview.
func (cl *Cluster) ScrapeToken(ctx context.Context) (string, error) {
	const name, ns = "bench-scraper", "kube-system"
	cs := cl.Kube
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("harness: scraper service account: %w", err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("harness: scraper role: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("harness: scraper binding: %w", err)
	}
	exp := int64(6 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("harness: scraper token: %w", err)
	}
	return tr.Status.Token, nil
}

// scrapeClient accepts the controller managers' self-signed certificates.
var scrapeClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed loopback serving certs
}

// Metrics fetches the replica's /metrics text.
func (m *CCM) Metrics(ctx context.Context, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(m.Port)+"/metrics", nil)
	if err != nil {
		return "", fmt.Errorf("harness: scrape %s: %w", m.Name, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("harness: scrape %s: %w", m.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("harness: scrape %s: %w", m.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("harness: scrape %s: HTTP %d: %.200s", m.Name, resp.StatusCode, b)
	}
	return string(b), nil
}

// APIRequests returns the replica's rest_client_requests_total, summed
// over every label set, retrying while the server comes up.
func (m *CCM) APIRequests(ctx context.Context, token string) (float64, error) {
	var total float64
	err := Poll(ctx, 250*time.Millisecond, time.Minute, "metrics of "+m.Name, func(ctx context.Context) (bool, error) {
		if m.Exited() {
			return false, fmt.Errorf("%s exited", m.Name)
		}
		text, err := m.Metrics(ctx, token)
		if err != nil {
			return false, nil
		}
		total = SumMetric(text, "rest_client_requests_total")
		return true, nil
	})
	return total, err
}

// SumMetric adds up every sample of a counter or gauge in Prometheus text
// format.
func SumMetric(text, name string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// Usage is a process' resource use at one moment.
type Usage struct {
	CPUSeconds float64
	PeakRSSMiB float64
	RSSMiB     float64
}

// Usage reads CPU time, peak and current RSS from /proc.
func (m *CCM) Usage() (Usage, error) {
	cpu, err := CPUSeconds(m.Pid())
	if err != nil {
		return Usage{}, err
	}
	peak, err := PeakRSSMiB(m.Pid())
	if err != nil {
		return Usage{}, err
	}
	rss, err := RSSMiB(m.Pid())
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPUSeconds: cpu, PeakRSSMiB: peak, RSSMiB: rss}, nil
}
