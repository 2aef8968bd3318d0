package localcloud

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Config is the provider configuration read from --cloud-config.
type Config struct {
	// URL of the localcloud API, e.g. http://127.0.0.1:8787.
	URL string
	// Token authenticates; TokenFile is read when Token is empty.
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
}

// DefaultClusterName matches the upstream --cluster-name default.
const DefaultClusterName = "kubernetes"

// ParseConfig reads the "key: value" (or "key = value") format; '#' starts
// a comment. Unknown keys are errors so that a typo is not silently ignored.
func ParseConfig(r io.Reader) (Config, error) {
	cfg := Config{ClusterName: DefaultClusterName, MaxRetries: -1}
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
			return Config{}, fmt.Errorf("cloud config line %d: %q is not key: value", n, line)
		}
		key = strings.TrimSpace(key)
		val = strings.Trim(strings.TrimSpace(val), `"'`)
		if err := cfg.set(key, val); err != nil {
			return Config{}, fmt.Errorf("cloud config line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, fmt.Errorf("read cloud config: %w", err)
	}
	return cfg, cfg.validate()
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
		if err != nil || n < 0 {
			return fmt.Errorf("maxRetries: %q is not a non-negative integer", val)
		}
		c.MaxRetries = n
	case "rateLimitQPS":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("rateLimitQPS: %q is not a non-negative number", val)
		}
		c.RateLimitQPS = f
	case "rateLimitBurst":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			return fmt.Errorf("rateLimitBurst: %q is not a positive integer", val)
		}
		c.RateLimitBurst = n
	default:
		return fmt.Errorf("unknown key %q (known: url, token, tokenFile, clusterName, maxRetries, rateLimitQPS, rateLimitBurst)", key)
	}
	return nil
}

func (c *Config) validate() error {
	if c.URL == "" {
		return errors.New("cloud config: url is required")
	}
	if c.Token == "" && c.TokenFile == "" {
		return errors.New("cloud config: token or tokenFile is required")
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	return nil
}

// resolveToken returns the literal token or the token file's content.
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
