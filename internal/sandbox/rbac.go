package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

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
	if manifest, err = adoptableByHelm(manifest); err != nil {
		return err
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

// helmRelease is the release name the sandbox's docs install the chart
// under (in deploy.Namespace): the chart's rendered RBAC is named for it.
const helmRelease = "stratus"

// adoptableByHelm marks the RBAC objects as the release helmRelease's, as
// Helm itself would: `helm install stratus` into the sandbox (with
// --no-ccm) then takes over the objects the sandbox applied rather than
// refusing them as another owner's. The chart labels them managed by Helm
// already; Helm also wants the release's annotations.
func adoptableByHelm(manifest []byte) ([]byte, error) {
	objs, err := deploy.Parse(manifest)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the chart's RBAC: %w", err)
	}
	var out bytes.Buffer
	for _, o := range objs {
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["meta.helm.sh/release-name"] = helmRelease
		a["meta.helm.sh/release-namespace"] = deploy.Namespace
		o.SetAnnotations(a)
		doc, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("sandbox: the chart's RBAC: %w", err)
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out.Bytes(), nil
}
