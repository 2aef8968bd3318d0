package localcloud

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Config is the provider configuration read from --cloud-config.
type Config struct {
	// URL of the localcloud API, e.g. http://127.0.0.1:8787.
	URL string
	// Token authenticates; TokenFile names a file holding it instead. A
	// config sets one of the two: with both, which credential the
	// provider used would depend on a precedence no one reads.
	Token     string
	TokenFile string
	// ClusterName is used when a controller passes an empty cluster name.
	ClusterName string
	// MaxRetries bounds the retries of rate-limited calls (-1: default).
	MaxRetries int
	// RateLimitQPS and RateLimitBurst pace the provider's HTTP requests
	// (0: unpaced). Set them to the cloud's limit: one provider call can be
	// several requests, so a limit on calls alone still draws 429s.
	RateLimitQPS   float64
	RateLimitBurst int
	// KubeProxyHealthPort, when set (kube-proxy's is 10256), makes load
	// balancers of Services with externalTrafficPolicy Cluster probe
	// GET /healthz on that port of each node, kube-proxy's own health,
	// as GCE's do. 0 keeps a TCP connect to the traffic's node port: the
	// nodes of a cluster without kube-proxy (kwok's) answer nothing there.
	KubeProxyHealthPort int
	// IPFamilies are the families the account's load balancers serve
	// (`ipFamilies: IPv4,IPv6`); IPv4 when unset. IPv6 needs the cloud's
	// IPv6 VIP pool (`localcloud serve --vip6-pool`).
	IPFamilies []corev1.IPFamily
	// EndpointTargets (`endpointTargets: true`) says that the cloud's load
	// balancers reach pod addresses: localcloud serves with a data-plane
	// namespace (--dataplane-netns), which follows its route table. The
	// provider then implements cloud.EndpointTargeter for every Service;
	// false, the default, it answers that it cannot, and Services that
	// need endpoint targets are refused.
	EndpointTargets bool
}

// Bounds on the numeric settings: generous, but finite, so that a typo
// cannot make the provider retry forever or pace itself to nothing.
const (
	MaxRateLimitQPS   = 1e6
	MaxRateLimitBurst = 1 << 20
	MaxMaxRetries     = 1000
)

// DefaultClusterName matches the upstream --cluster-name default.
const DefaultClusterName = "kubernetes"

// ParseConfig reads the "key: value" (or "key = value") format; '#' starts
// a comment. Unknown and repeated keys are errors so that a typo or a
// merge leftover is not silently ignored, and every bad line is reported
// at once.
func ParseConfig(r io.Reader) (Config, error) {
	cfg := Config{ClusterName: DefaultClusterName, MaxRetries: -1}
	var errs []error
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" || line == "[global]" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if eq, v2, ok2 := strings.Cut(line, "="); ok2 && (!ok || len(eq) < len(key)) {
			key, val, ok = eq, v2, true
		}
		if !ok {
			errs = append(errs, fmt.Errorf("cloud config line %d: %q is not key: value", n, line))
			continue
		}
		key = strings.TrimSpace(key)
		val = strings.Trim(strings.TrimSpace(val), `"'`)
		if first, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("cloud config line %d: %s: repeats line %d", n, key, first))
			continue
		}
		seen[key] = n
		if err := cfg.set(key, val); err != nil {
			errs = append(errs, fmt.Errorf("cloud config line %d: %w", n, err))
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, fmt.Errorf("read cloud config: %w", err)
	}
	if err := errors.Join(append(errs, cfg.validate())...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func (c *Config) set(key, val string) error {
	switch key {
	case "url":
		c.URL = val
	case "token":
		c.Token = val
	case "tokenFile":
		c.TokenFile = val
	case "clusterName":
		c.ClusterName = val
	case "maxRetries":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > MaxMaxRetries {
			return fmt.Errorf("maxRetries: %q is not an integer from 0 to %d", val, MaxMaxRetries)
		}
		c.MaxRetries = n
	case "rateLimitQPS":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > MaxRateLimitQPS {
			return fmt.Errorf("rateLimitQPS: %q is not a number from 0 to %g", val, float64(MaxRateLimitQPS))
		}
		c.RateLimitQPS = f
	case "rateLimitBurst":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > MaxRateLimitBurst {
			return fmt.Errorf("rateLimitBurst: %q is not an integer from 1 to %d", val, MaxRateLimitBurst)
		}
		c.RateLimitBurst = n
	case "kubeProxyHealthPort":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("kubeProxyHealthPort: %q is not a port from 0 to 65535", val)
		}
		c.KubeProxyHealthPort = n
	case "ipFamilies":
		fams, err := parseFamilies(val)
		if err != nil {
			return err
		}
		c.IPFamilies = fams
	case "endpointTargets":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return fmt.Errorf("endpointTargets: %q is not true or false", val)
		}
		c.EndpointTargets = b
	default:
		return fmt.Errorf("unknown key %q (known: url, token, tokenFile, clusterName, maxRetries, rateLimitQPS, rateLimitBurst, kubeProxyHealthPort, ipFamilies, endpointTargets)", key)
	}
	return nil
}

func (c *Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("cloud config: url is required"))
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("cloud config: url: %q is not an http(s) URL", c.URL))
	}
	switch {
	case c.Token == "" && c.TokenFile == "":
		errs = append(errs, errors.New("cloud config: token or tokenFile is required"))
	case c.Token != "" && c.TokenFile != "":
		// One of them is a leftover, and nothing tells which: refuse
		// rather than authenticate with one while the operator rotates
		// the other.
		errs = append(errs, fmt.Errorf("cloud config: token and tokenFile (%s) are both set; set only one", c.TokenFile))
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	return errors.Join(errs...)
}

// resolveToken returns the literal token or the token file's content
// (validate refuses a config with both).
func (c *Config) resolveToken() (string, error) {
	if c.Token != "" {
		return c.Token, nil
	}
	data, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("cloud config: read tokenFile: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("cloud config: tokenFile %s is empty", c.TokenFile)
	}
	return tok, nil
}

// parseFamilies reads "IPv4", "IPv6" or both, comma-separated, each once.
func parseFamilies(val string) ([]corev1.IPFamily, error) {
	var out []corev1.IPFamily
	for _, f := range strings.Split(val, ",") {
		fam := corev1.IPFamily(strings.TrimSpace(f))
		switch {
		case fam != corev1.IPv4Protocol && fam != corev1.IPv6Protocol:
			return nil, fmt.Errorf("ipFamilies: %q: want IPv4, IPv6 or both, comma-separated", val)
		case slices.Contains(out, fam):
			return nil, fmt.Errorf("ipFamilies: %q lists %s twice", val, fam)
		}
		out = append(out, fam)
	}
	return out, nil
}
