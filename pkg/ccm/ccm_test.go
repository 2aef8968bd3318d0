package ccm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	cliflag "k8s.io/component-base/cli/flag"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stratus-ccm/stratus/pkg/ccm"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
)

// inputsProvider is a provider whose constructor needs the daemon's
// inputs, as hcloud's NewCloud(cidr, nodeLister) does. It records what it
// was given and what its Initialize could read through the node lister.
type inputsProvider struct {
	cloudprovider.Interface // nil: only the methods below are called

	mu            sync.Mutex
	in            ccm.Inputs
	config        string
	initNodes     []string
	informers     informers.SharedInformerFactory
	initializedCh chan struct{}
}

func (p *inputsProvider) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {
	nodes, err := p.in.NodeLister.List(labels.Everything())
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		for _, n := range nodes {
			p.initNodes = append(p.initNodes, n.Name)
		}
	}
	close(p.initializedCh)
}

func (p *inputsProvider) SetInformers(f informers.SharedInformerFactory) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.informers = f
}

func (p *inputsProvider) ProviderName() string                             { return "inputs" }
func (p *inputsProvider) HasClusterID() bool                               { return true }
func (p *inputsProvider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }
func (p *inputsProvider) Instances() (cloudprovider.Instances, bool)       { return nil, false }
func (p *inputsProvider) InstancesV2() (cloudprovider.InstancesV2, bool)   { return nil, false }
func (p *inputsProvider) Zones() (cloudprovider.Zones, bool)               { return nil, false }
func (p *inputsProvider) Clusters() (cloudprovider.Clusters, bool)         { return nil, false }
func (p *inputsProvider) Routes() (cloudprovider.Routes, bool)             { return nil, false }

// markerController creates a ConfigMap named after itself once started, so
// the test sees which extra controllers ran and with what context.
func markerController(name string, offByDefault bool) ccm.Controller {
	return ccm.Controller{
		Name:         name,
		OffByDefault: offByDefault,
		Start: func(_ context.Context, cc ccm.ControllerContext) (bool, string, error) {
			if cc.Cloud == nil || cc.Metrics == nil || cc.ClusterName != "c1" {
				return false, "", errors.New("controller context lacks the cloud, the metrics registerer or the cluster name")
			}
			err := cc.Manager.Add(manager.RunnableFunc(func(ctx context.Context) error {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
					Data: map[string]string{"provider": cc.Cloud.ProviderName()}}
				return cc.Manager.GetClient().Create(ctx, cm)
			}))
			return err == nil, "", err
		},
	}
}

func TestNewCommandGivesProviderItsInputsAndRunsExtraControllers(t *testing.T) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 2*time.Minute)
	cs := env.Clientset
	if _, err := localcluster.CreateNode(ctx, cs, "before-start", localcluster.NodeOptions{Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	cfgFile := t.TempDir() + "/cloud.conf"
	writeFile(t, cfgFile, "token: abc\n")

	p := &inputsProvider{initializedCh: make(chan struct{})}
	// The provider's own flag, and --cloud-provider defaulted to it as a
	// vendor's main does: its manifest passes neither.
	var fss cliflag.NamedFlagSets
	region := fss.FlagSet("inputs").String("inputs-region", "nowhere", "the provider's own flag")
	cfg := ccm.Config{
		Providers: []ccm.Provider{{Name: "inputs", New: func(_ context.Context, in ccm.Inputs) (cloudprovider.Interface, error) {
			b, err := io.ReadAll(in.Config)
			if err != nil {
				return nil, err
			}
			if *region != "eu-1" {
				return nil, fmt.Errorf("--inputs-region = %q when the provider is built, want eu-1", *region)
			}
			p.in, p.config = in, string(b)
			return p, nil
		}}},
		Controllers:  []ccm.Controller{markerController("extra-on", false), markerController("extra-off", true)},
		Metrics:      prometheus.NewRegistry(),
		FlagDefaults: map[string]string{"cloud-provider": "inputs"},
		Flags:        fss,
	}
	cmd := ccm.NewCommand(cfg)
	cmd.SetArgs([]string{"--inputs-region=eu-1", "--cloud-config=" + cfgFile, "--kubeconfig=" + env.Kubeconfig,
		"--cluster-name=c1", "--cluster-cidr=10.244.0.0/16", "--leader-elect=false", "--secure-port=0",
		"--controllers=*,-cloud-node-lifecycle-controller"})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})

	select {
	case <-p.initializedCh:
	case err := <-done:
		t.Fatalf("daemon exited before initializing the provider: %v", err)
	case <-ctx.Done():
		t.Fatal("provider never initialized")
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "extra-on", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && cm.Data["provider"] == "inputs", err
	})
	if err != nil {
		t.Fatalf("extra controller enabled by '*' did not run: %v", err)
	}
	// Extra controllers start after SetInformers, so all of it is done.
	p.mu.Lock()
	if p.in.Name != "inputs" || p.in.ClusterName != "c1" || p.in.ClusterCIDR != "10.244.0.0/16" || p.config != "token: abc\n" {
		t.Errorf("constructor inputs = name %q cluster %q cidr %q config %q; want inputs, c1, 10.244.0.0/16 and the file's contents",
			p.in.Name, p.in.ClusterName, p.in.ClusterCIDR, p.config)
	}
	if p.in.InformerFactory == nil || p.informers != p.in.InformerFactory {
		t.Errorf("SetInformers got %v, want the factory the constructor got (%v)", p.informers, p.in.InformerFactory)
	}
	if strings.Join(p.initNodes, ",") != "before-start" {
		t.Errorf("node lister in Initialize listed %v, want [before-start]", p.initNodes)
	}
	p.mu.Unlock()

	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "extra-off", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("extra controller that is off by default ran under '*' (get: %v)", err)
	}
}
