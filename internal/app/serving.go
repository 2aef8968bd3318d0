package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
)

// server serves /healthz, /readyz and /livez openly and /metrics behind
// delegated authentication (TokenReview) and authorization
// (SubjectAccessReview), on one TLS port as upstream does. It runs on every
// replica, leader or not, so that probes and scrapes work on standbys too.
type server struct {
	addr     string
	tls      *tls.Config
	handler  http.Handler
	ready    *atomic.Bool
	listener net.Listener
}

// newServer binds the port at once, so that a port already in use is a
// startup error naming the flag rather than a failure after leader election.
func newServer(o *Options, authCfg *rest.Config, gatherer prometheus.Gatherer, ready *atomic.Bool, watcher **certwatcher.CertWatcher, debug map[string]http.Handler) (*server, error) {
	tlsCfg, cw, err := servingTLS(o)
	if err != nil {
		return nil, err
	}
	*watcher = cw
	httpClient, err := rest.HTTPClientFor(authCfg)
	if err != nil {
		return nil, fmt.Errorf("serving: client for delegated auth: %w", err)
	}
	filter, err := filters.WithAuthenticationAndAuthorization(authCfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("serving: delegated auth: %w", err)
	}
	metricsHandler, err := filter(klog.Background().WithName("metrics-auth"),
		promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	if err != nil {
		return nil, fmt.Errorf("serving: delegated auth: %w", err)
	}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	open := map[string]http.HandlerFunc{
		"/healthz": ok,
		"/livez":   ok,
		"/readyz": func(w http.ResponseWriter, _ *http.Request) {
			if !ready.Load() {
				http.Error(w, "caches not synced", http.StatusServiceUnavailable)
				return
			}
			ok(w, nil)
		},
	}
	allow := map[string]bool{}
	for _, p := range o.AuthorizationAlwaysAllowPaths {
		allow[p] = true
	}
	for path, h := range open {
		if allow[path] {
			mux.Handle(path, h)
		} else {
			guarded, err := filter(klog.Background().WithName("health-auth"), h)
			if err != nil {
				return nil, fmt.Errorf("serving: delegated auth: %w", err)
			}
			mux.Handle(path, guarded)
		}
	}
	mux.Handle("/metrics", metricsHandler)
	// Debug pages (observe mode's plan) are authorized like /metrics.
	for path, h := range debug {
		guarded, err := filter(klog.Background().WithName("debug-auth"), h)
		if err != nil {
			return nil, fmt.Errorf("serving: delegated auth: %w", err)
		}
		mux.Handle(path, guarded)
	}

	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--secure-port=%d --bind-address=%s: %w", o.SecurePort, o.BindAddress, err)
	}
	return &server{addr: addr, tls: tlsCfg, handler: mux, ready: ready, listener: ln}, nil
}

// Start serves until ctx ends, then shuts down gracefully.
func (s *server) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("address", s.listener.Addr().String())
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.tls,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Serve(tls.NewListener(s.listener, s.tls)) }()
	log.Info("Serving health and metrics over HTTPS")
	select {
	case err := <-errCh:
		return fmt.Errorf("serving %s: %w", s.addr, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving %s: shutdown: %w", s.addr, err)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves probes and metrics.
func (s *server) NeedLeaderElection() bool { return false }

// servingTLS returns the TLS config: the given certificate (reloaded on
// change), or a self-signed one, kept in --cert-dir when that is set.
func servingTLS(o *Options) (*tls.Config, *certwatcher.CertWatcher, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	if o.TLSCertFile != "" {
		cw, err := certwatcher.New(o.TLSCertFile, o.TLSPrivateKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert-file=%s --tls-private-key-file=%s: %w", o.TLSCertFile, o.TLSPrivateKeyFile, err)
		}
		cfg.GetCertificate = cw.GetCertificate
		return cfg, cw, nil
	}
	certPEM, keyPEM, err := selfSignedPair(o)
	if err != nil {
		return nil, nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("serving: self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil, nil
}

func selfSignedPair(o *Options) ([]byte, []byte, error) {
	var certPath, keyPath string
	if o.CertDir != "" {
		certPath = filepath.Join(o.CertDir, "cloud-controller-manager.crt")
		keyPath = filepath.Join(o.CertDir, "cloud-controller-manager.key")
		c, cerr := os.ReadFile(certPath)
		k, kerr := os.ReadFile(keyPath)
		if cerr == nil && kerr == nil {
			return c, k, nil
		}
	}
	host := "localhost"
	var ips []net.IP
	if ip := net.ParseIP(o.BindAddress); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("serving: generate self-signed certificate: %w", err)
	}
	if o.CertDir != "" {
		if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("--cert-dir=%s: %w", o.CertDir, err)
		}
		if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
			return nil, nil, fmt.Errorf("--cert-dir=%s: %w", o.CertDir, err)
		}
		if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, nil, fmt.Errorf("--cert-dir=%s: %w", o.CertDir, err)
		}
	}
	return certPEM, keyPEM, nil
}
