package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	"github.com/stratus-ccm/stratus/pkg/localcloud/dataplane"
	"github.com/stratus-ccm/stratus/pkg/localcloud/store"
)

// TokenFileName is the file in the state directory holding the generated
// token when none is configured.
const TokenFileName = "token"

// Config configures a Server.
type Config struct {
	// Listen is the API address; default 127.0.0.1:0 (a free port).
	Listen string
	// StateDir holds the database and, when generated, the token.
	StateDir string
	// Token, else the content of TokenFile, else STATE_DIR/token (created
	// with a random token when missing) authenticates API calls.
	Token     string
	TokenFile string
	// Knobs are the realism settings of a new cloud; nil means
	// api.DefaultKnobs(). A cloud whose state holds saved settings resumes
	// those instead.
	Knobs *api.Knobs
	// KnobOverrides, when set, are applied on top of the saved (or
	// initial) settings at start and saved: what a flag given explicitly
	// asks for wins over what was set before.
	KnobOverrides *api.KnobsPatch
	// Pools are the address pools; a zero prefix takes the default.
	Pools store.Pools
	// BindRetryInterval is how often a load balancer in error (its
	// VIP:port could not be bound) tries again; default 5s.
	BindRetryInterval time.Duration
	// DataPlane says where load balancers live and how they forward; the
	// zero value proxies on the machine's own (loopback) VIPs.
	DataPlane dataplane.Options
}

// Server is one localcloud.
type Server struct {
	cfg   Config
	token string
	store *store.Store
	knobs *knobs
	stats *stats
	mux   *http.ServeMux

	mu      sync.Mutex
	started bool
	ctx     context.Context
	cancel  context.CancelFunc
	dp      *dataplane.Manager
	ln      net.Listener
	http    *http.Server
	timers  map[string]*time.Timer
	closed  bool
	// routeKick wakes the route follower; routesDone closes when it ends.
	routeKick  chan struct{}
	routesDone chan struct{}
}

// New opens the state directory and prepares the server; nothing listens
// until Start.
func New(cfg Config) (*Server, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("localcloud server: state dir is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Pools = withDefaultPools(cfg.Pools)
	if cfg.BindRetryInterval <= 0 {
		cfg.BindRetryInterval = 5 * time.Second
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("localcloud server: create state dir: %w", err)
	}
	token, err := resolveToken(cfg)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(cfg.StateDir, cfg.Pools)
	if err != nil {
		return nil, err
	}
	k, err := startKnobs(cfg, st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	s := &Server{
		cfg: cfg, token: token, store: st, knobs: newKnobs(k), stats: newStats(),
		timers: map[string]*time.Timer{}, ctx: context.Background(), routeKick: make(chan struct{}, 1),
	}
	s.mux = s.routes()
	return s, nil
}

// startKnobs resumes the saved settings (or takes the initial ones of a new
// cloud), applies the overrides, validates and saves the result.
func startKnobs(cfg Config, st *store.Store) (api.Knobs, error) {
	k, saved, err := st.Knobs()
	if err != nil {
		return api.Knobs{}, err
	}
	if !saved {
		k = api.DefaultKnobs()
		if cfg.Knobs != nil {
			k = *cfg.Knobs
		}
	}
	if cfg.KnobOverrides != nil {
		k = k.Apply(*cfg.KnobOverrides)
	}
	if err := k.Validate(); err != nil {
		return api.Knobs{}, fmt.Errorf("localcloud server: %w", err)
	}
	if err := st.SaveKnobs(k); err != nil {
		return api.Knobs{}, err
	}
	return k, nil
}

func withDefaultPools(p store.Pools) store.Pools {
	d := store.DefaultPools()
	if !p.Internal.IsValid() {
		p.Internal = d.Internal
	}
	if !p.External.IsValid() {
		p.External = d.External
	}
	if !p.VIP.IsValid() {
		p.VIP = d.VIP
	}
	return p
}

func resolveToken(cfg Config) (string, error) {
	if cfg.Token != "" {
		return cfg.Token, nil
	}
	path := cfg.TokenFile
	generate := false
	if path == "" {
		path = filepath.Join(cfg.StateDir, TokenFileName)
		generate = true
	}
	data, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(data)) != "" {
		return strings.TrimSpace(string(data)), nil
	}
	if !generate || (err != nil && !errors.Is(err, os.ErrNotExist)) {
		if err == nil {
			err = errors.New("file is empty")
		}
		return "", fmt.Errorf("localcloud server: read token file %s: %w", path, err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("localcloud server: generate token: %w", err)
	}
	token := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("localcloud server: write token file: %w", err)
	}
	return token, nil
}

// Start binds the API address, resumes load balancers (active ones start
// forwarding again) and serves in the background. ctx bounds the server's
// background work and carries its logger.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("localcloud server: already started")
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("localcloud server: listen %s: %w", s.cfg.Listen, err)
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	dp, err := dataplane.NewManagerIn(s.ctx, s.cfg.DataPlane)
	if err != nil {
		s.cancel()
		_ = ln.Close()
		return fmt.Errorf("localcloud server: %w", err)
	}
	s.started = true
	s.dp = dp
	s.ln = ln
	s.http = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.resumeLocked()
	if s.cfg.DataPlane.Netns != "" {
		s.routesDone = make(chan struct{})
		go s.followRoutes(s.ctx, dp, s.routesDone)
	}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "localcloud API server stopped")
		}
	}()
	klog.FromContext(ctx).Info("localcloud serving", "url", s.URL(), "stateDir", s.cfg.StateDir)
	return nil
}

// Close stops serving, closes every data plane listener, stops the timers
// and closes the database. In-flight requests get a few seconds to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for id, t := range s.timers {
		t.Stop()
		delete(s.timers, id)
	}
	httpSrv, dp, cancel, routesDone := s.http, s.dp, s.cancel, s.routesDone
	s.mu.Unlock()

	var errs []error
	if httpSrv != nil {
		ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		if err := httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown http: %w", err))
		}
		done()
	}
	if cancel != nil {
		cancel()
	}
	if routesDone != nil {
		<-routesDone
	}
	if dp != nil {
		dp.Close()
	}
	if err := s.store.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("localcloud server: close: %w", err)
	}
	return nil
}

// URL is the API base URL, e.g. http://127.0.0.1:41234 (valid after Start).
func (s *Server) URL() string { return "http://" + s.Addr() }

// Addr is the bound API address (valid after Start).
func (s *Server) Addr() string {
	if s.ln == nil {
		return s.cfg.Listen
	}
	return s.ln.Addr().String()
}

// Token is the bearer token clients must send.
func (s *Server) Token() string { return s.token }

// BackendHealth reports the data plane's view of a load balancer's
// backends (instance id → healthy); nil when it is not forwarding.
func (s *Server) BackendHealth(lbID string) map[string]bool {
	s.mu.Lock()
	dp := s.dp
	s.mu.Unlock()
	if dp == nil {
		return nil
	}
	return dp.Health(lbID)
}

func (s *Server) baseCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

func parseAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}
