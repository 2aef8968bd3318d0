package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// The controller manager runs as the chart's ServiceAccount, under the
// chart's RBAC and nothing more, as it would in a cluster.
const (
	ccmServiceAccount = "cloud-controller-manager"
	// ccmTokenTTL is the daemon's token lifetime; it is renewed at half of
	// it into the token file the kubeconfig references (client-go re-reads
	// the file), and at every start, since the API server's signing key is
	// new each run.
	ccmTokenTTL = 24 * time.Hour
)

// installRBAC applies the chart's RBAC with every controller on, and
// writes the controller manager's kubeconfig with a fresh token, which it
// keeps renewing while the sandbox runs.
func (s *sandbox) installRBAC(ctx context.Context) error {
	manifest, err := deploy.Manifest(deploy.AllControllersRBAC)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := localcluster.InstallRBAC(ctx, s.restCfg, manifest); err != nil {
		return fmt.Errorf("sandbox: the chart's RBAC: %w", err)
	}
	if err := s.renewCCMToken(ctx); err != nil {
		return err
	}
	cfg := rest.AnonymousClientConfig(s.restCfg)
	cfg.BearerTokenFile = s.ccmTokenFile()
	if err := localcluster.WriteKubeconfig(cfg, s.ccmKubeconfig()); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	go renewEvery(ctx, ccmTokenTTL/2, "the controller manager's token", s.renewCCMToken)
	return nil
}

func (s *sandbox) renewCCMToken(ctx context.Context) error {
	cfg, err := localcluster.ServiceAccountConfig(ctx, s.restCfg, deploy.Namespace, ccmServiceAccount, ccmTokenTTL)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	// Written aside and renamed, so that client-go never reads half a token.
	tmp := s.ccmTokenFile() + ".new"
	if err := writeFile(tmp, []byte(cfg.BearerToken)); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.ccmTokenFile()); err != nil {
		return fmt.Errorf("sandbox: controller manager token: %w", err)
	}
	return nil
}

func (s *sandbox) ccmTokenFile() string { return filepath.Join(s.state, "run", "ccm-token") }

// ccmKubeconfig is the controller manager's kubeconfig: the chart's
// ServiceAccount, not the sandbox's admin.
func (s *sandbox) ccmKubeconfig() string { return filepath.Join(s.state, "run", "ccm-kubeconfig") }
