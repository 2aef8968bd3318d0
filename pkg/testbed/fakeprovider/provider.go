// Package fakeprovider is a minimal cloudprovider.Interface for tests of
// the daemon's plumbing (provider lookup, Initialize, leader election). It
// registers itself only through upstream's global registry, the way
// out-of-tree providers do, so tests prove that path works.
package fakeprovider

import (
	"context"
	"io"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// Name is the provider name it registers under.
const Name = "fake-global"

// InitializedConfigMap is created in kube-system by Initialize, with the
// process's hostname+pid in its data, so a test sees which replica ran it.
const InitializedConfigMap = "fake-provider-initialized"

// Register adds the provider to upstream's global registry.
func Register() { RegisterAs(Name) }

// RegisterAs adds the provider to upstream's global registry under another
// name, so that a test can run a vendor's manifest (--cloud-provider=hcloud)
// with its arguments unchanged.
func RegisterAs(name string) {
	cloudprovider.RegisterCloudProvider(name, func(_ io.Reader) (cloudprovider.Interface, error) {
		return &provider{}, nil
	})
}

type provider struct{}

var _ cloudprovider.Interface = (*provider)(nil)

// Initialize records that it ran, through the client the daemon gave it.
func (p *provider) Initialize(b cloudprovider.ControllerClientBuilder, _ <-chan struct{}) {
	cs, err := b.Client("fake-provider")
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	id := host + "/" + strconv.Itoa(os.Getpid())
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: InitializedConfigMap, Namespace: "kube-system"},
		Data:       map[string]string{"by": id},
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, _ = cs.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{})
	}
}

func (p *provider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }
func (p *provider) Instances() (cloudprovider.Instances, bool)       { return nil, false }
func (p *provider) InstancesV2() (cloudprovider.InstancesV2, bool)   { return nil, false }
func (p *provider) Zones() (cloudprovider.Zones, bool)               { return nil, false }
func (p *provider) Clusters() (cloudprovider.Clusters, bool)         { return nil, false }
func (p *provider) Routes() (cloudprovider.Routes, bool)             { return nil, false }
func (p *provider) ProviderName() string                             { return Name }
func (p *provider) HasClusterID() bool                               { return true }
