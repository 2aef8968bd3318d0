package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
)

// StateDirEnv names the directory where a double writes what it did
// (routes.json, initialized.json), so that a test reads it from outside
// the process, whichever controller manager runs the double. Unset, the
// double keeps its state in memory only.
const StateDirEnv = "VENDOR_DOUBLE_STATE_DIR"

const (
	routesFile      = "routes.json"
	initializedFile = "initialized.json"
)

// Route is one route in a double's cloud.
type Route struct {
	Node string `json:"node"`
	CIDR string `json:"cidr"`
}

// Initialized is what a double's Initialize got from the client builder.
type Initialized struct {
	// Client is the name it asked the builder for.
	Client string `json:"client"`
	// User is who the API server says that client is (a
	// SelfSubjectReview): the daemon's identity, or a ServiceAccount of
	// that name under --use-service-account-credentials.
	User string `json:"user"`
	// Call is the request the vendor's Initialize makes with it, if any.
	Call string `json:"call,omitempty"`
	// Error is the first error on the way, if any.
	Error string `json:"error,omitempty"`
}

type state struct{ dir string }

func openState() state { return state{dir: os.Getenv(StateDirEnv)} }

// write replaces name in the state directory with v as JSON, atomically.
func (s state) write(name string, v any) error {
	if s.dir == "" {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(s.dir, name+".*")
	if err != nil {
		return fmt.Errorf("state %s: %w", name, err)
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return fmt.Errorf("state %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.dir, name)); err != nil {
		return fmt.Errorf("state %s: %w", name, err)
	}
	return nil
}

// ReadRoutes returns the routes the double with state directory dir holds,
// none when it has written none.
func ReadRoutes(dir string) ([]Route, error) {
	var out []Route
	_, err := read(dir, routesFile, &out)
	return out, err
}

// ReadInitialized returns what the double's Initialize recorded, and
// whether it ran.
func ReadInitialized(dir string) (Initialized, bool, error) {
	var out Initialized
	ok, err := read(dir, initializedFile, &out)
	return out, ok, err
}

func read(dir, name string, v any) (bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state %s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("state %s: %w", name, err)
	}
	return true, nil
}

// Initialize asks the client builder for the client the vendor's
// Initialize asks for, learns whom the API server takes it for, makes the
// request the vendor's makes with it (AWS' reads the server version;
// DigitalOcean's and kube-vip's start a Service informer), and records it.
// The vendors' ClientOrDie would end the process on an error; the double
// records it for the test to compare.
func (p *provider) Initialize(b cloudprovider.ControllerClientBuilder, _ <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := Initialized{Client: p.v.InitClient}
	if err := p.initialize(ctx, b, &rec); err != nil {
		rec.Error = err.Error()
	}
	if err := p.state.write(initializedFile, rec); err != nil {
		fmt.Fprintf(os.Stderr, "vendor double %s: %v\n", p.v.Name, err)
	}
}

func (p *provider) initialize(ctx context.Context, b cloudprovider.ControllerClientBuilder, rec *Initialized) error {
	c, err := b.Client(p.v.InitClient)
	if err != nil {
		return fmt.Errorf("client %s: %w", p.v.InitClient, err)
	}
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("self subject review: %w", err)
	}
	rec.User = review.Status.UserInfo.Username
	return initCall(ctx, p.v.Name, c, rec)
}

func initCall(ctx context.Context, vendor string, c kubernetes.Interface, rec *Initialized) error {
	switch vendor {
	case "aws":
		rec.Call = "server version"
		if _, err := c.Discovery().ServerVersion(); err != nil {
			return fmt.Errorf("server version: %w", err)
		}
	case "digitalocean", "kube-vip":
		rec.Call = "list services"
		if _, err := c.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("list services: %w", err)
		}
	}
	return nil
}
