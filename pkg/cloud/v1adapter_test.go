package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// fakeInstance is one machine of fakeV1.
type fakeInstance struct {
	addrs    []corev1.NodeAddress
	typ      string
	zone     cloudprovider.Zone
	shutdown bool
}

// fakeV1 is a provider's legacy Instances and Zones over a map of
// machines. Lookups of unknown machines answer InstanceNotFound; the err
// fields replace an answer with an error. It records every call.
type fakeV1 struct {
	cloudprovider.Instances // the methods the adapter never calls

	ids    map[types.NodeName]string // InstanceID answers
	byID   map[string]fakeInstance   // by providerID
	byName map[types.NodeName]fakeInstance

	idErr, byIDErr, byNameErr, existsErr, shutdownErr, zoneIDErr, zoneNameErr error

	calls []string
}

func (f *fakeV1) record(op, arg string) { f.calls = append(f.calls, op+"("+arg+")") }

func (f *fakeV1) InstanceID(_ context.Context, name types.NodeName) (string, error) {
	f.record("InstanceID", string(name))
	if f.idErr != nil {
		return "", f.idErr
	}
	id, ok := f.ids[name]
	if !ok {
		return "", cloudprovider.InstanceNotFound
	}
	return id, nil
}

func lookup[K comparable](m map[K]fakeInstance, k K, err error) (fakeInstance, error) {
	if err != nil {
		return fakeInstance{}, err
	}
	inst, ok := m[k]
	if !ok {
		return fakeInstance{}, cloudprovider.InstanceNotFound
	}
	return inst, nil
}

func (f *fakeV1) NodeAddressesByProviderID(_ context.Context, id string) ([]corev1.NodeAddress, error) {
	f.record("NodeAddressesByProviderID", id)
	inst, err := lookup(f.byID, id, f.byIDErr)
	return inst.addrs, err
}

func (f *fakeV1) NodeAddresses(_ context.Context, name types.NodeName) ([]corev1.NodeAddress, error) {
	f.record("NodeAddresses", string(name))
	inst, err := lookup(f.byName, name, f.byNameErr)
	return inst.addrs, err
}

func (f *fakeV1) InstanceTypeByProviderID(_ context.Context, id string) (string, error) {
	f.record("InstanceTypeByProviderID", id)
	inst, err := lookup(f.byID, id, f.byIDErr)
	return inst.typ, err
}

func (f *fakeV1) InstanceType(_ context.Context, name types.NodeName) (string, error) {
	f.record("InstanceType", string(name))
	inst, err := lookup(f.byName, name, f.byNameErr)
	return inst.typ, err
}

func (f *fakeV1) InstanceExistsByProviderID(_ context.Context, id string) (bool, error) {
	f.record("InstanceExistsByProviderID", id)
	if f.existsErr != nil {
		return false, f.existsErr
	}
	_, ok := f.byID[id]
	return ok, nil
}

func (f *fakeV1) InstanceShutdownByProviderID(_ context.Context, id string) (bool, error) {
	f.record("InstanceShutdownByProviderID", id)
	if f.shutdownErr != nil {
		return false, f.shutdownErr
	}
	inst, err := lookup(f.byID, id, nil)
	return inst.shutdown, err
}

func (f *fakeV1) GetZone(context.Context) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, cloudprovider.NotImplemented
}

func (f *fakeV1) GetZoneByProviderID(_ context.Context, id string) (cloudprovider.Zone, error) {
	f.record("GetZoneByProviderID", id)
	inst, err := lookup(f.byID, id, f.zoneIDErr)
	return inst.zone, err
}

func (f *fakeV1) GetZoneByNodeName(_ context.Context, name types.NodeName) (cloudprovider.Zone, error) {
	f.record("GetZoneByNodeName", string(name))
	inst, err := lookup(f.byName, name, f.zoneNameErr)
	return inst.zone, err
}

var (
	m1 = fakeInstance{
		addrs:    []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		typ:      "m.small",
		zone:     cloudprovider.Zone{FailureDomain: "zone-a", Region: "region-1"},
		shutdown: true,
	}
	errCloud = errors.New("cloud unavailable")
)

// newFakeV1 knows machine m1 as node n1, instance ID i-1.
func newFakeV1() *fakeV1 {
	return &fakeV1{
		ids:    map[types.NodeName]string{"n1": "i-1"},
		byID:   map[string]fakeInstance{"fake://i-1": m1},
		byName: map[types.NodeName]fakeInstance{"n1": m1},
	}
}

func testNode(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func wantCalls(t *testing.T, f *fakeV1, want ...string) {
	t.Helper()
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls = %q, want %q", f.calls, want)
	}
}

func wantErr(t *testing.T, err error, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want one wrapping %v", targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("err = %v, want it to wrap %v", err, target)
		}
	}
}

func TestV1AdapterInstanceExists(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		node      *corev1.Node
		setup     func(*fakeV1)
		want      bool
		wantErrs  []error
		wantCalls []string
	}{
		{name: "by the node's providerID", node: testNode("n1", "fake://i-1"), want: true,
			wantCalls: []string{"InstanceExistsByProviderID(fake://i-1)"}},
		{name: "gone by the node's providerID", node: testNode("n1", "fake://i-9"), want: false,
			wantCalls: []string{"InstanceExistsByProviderID(fake://i-9)"}},
		{name: "providerID built from InstanceID", node: testNode("n1", ""), want: true,
			wantCalls: []string{"InstanceID(n1)", "InstanceExistsByProviderID(fake://i-1)"}},
		{name: "InstanceID not found means gone", node: testNode("n2", ""), want: false,
			wantCalls: []string{"InstanceID(n2)"}},
		{name: "InstanceID not found, wrapped by the provider", node: testNode("n1", ""),
			setup: func(f *fakeV1) { f.idErr = fmt.Errorf("lookup: %w", cloudprovider.InstanceNotFound) }, want: false,
			wantCalls: []string{"InstanceID(n1)"}},
		{name: "InstanceID fails", node: testNode("n1", ""),
			setup:    func(f *fakeV1) { f.idErr = errCloud },
			wantErrs: []error{errCloud}, wantCalls: []string{"InstanceID(n1)"}},
		{name: "InstanceID not implemented is an error", node: testNode("n1", ""),
			setup:    func(f *fakeV1) { f.idErr = cloudprovider.NotImplemented },
			wantErrs: []error{cloudprovider.NotImplemented}, wantCalls: []string{"InstanceID(n1)"}},
		{name: "InstanceExistsByProviderID fails", node: testNode("n1", "fake://i-1"),
			setup:    func(f *fakeV1) { f.existsErr = errCloud },
			wantErrs: []error{errCloud}, wantCalls: []string{"InstanceExistsByProviderID(fake://i-1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeV1()
			if tt.setup != nil {
				tt.setup(f)
			}
			got, err := InstancesV2FromV1("fake", f, f).InstanceExists(context.Background(), tt.node)
			if tt.wantErrs != nil {
				wantErr(t, err, tt.wantErrs...)
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("exists = %v, want %v", got, tt.want)
			}
			wantCalls(t, f, tt.wantCalls...)
		})
	}
}

func TestV1AdapterInstanceShutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		node      *corev1.Node
		setup     func(*fakeV1)
		want      bool
		wantErrs  []error
		wantCalls []string
	}{
		{name: "by the node's providerID", node: testNode("n1", "fake://i-1"), want: true,
			wantCalls: []string{"InstanceShutdownByProviderID(fake://i-1)"}},
		{name: "providerID built from InstanceID", node: testNode("n1", ""), want: true,
			wantCalls: []string{"InstanceID(n1)", "InstanceShutdownByProviderID(fake://i-1)"}},
		{name: "InstanceID not found means not shut down", node: testNode("n2", ""), want: false,
			wantCalls: []string{"InstanceID(n2)"}},
		{name: "InstanceID fails", node: testNode("n1", ""),
			setup:    func(f *fakeV1) { f.idErr = errCloud },
			wantErrs: []error{errCloud}, wantCalls: []string{"InstanceID(n1)"}},
		{name: "not implemented means not shut down", node: testNode("n1", "fake://i-1"),
			setup: func(f *fakeV1) { f.shutdownErr = cloudprovider.NotImplemented }, want: false,
			wantCalls: []string{"InstanceShutdownByProviderID(fake://i-1)"}},
		{name: "InstanceShutdownByProviderID fails", node: testNode("n1", "fake://i-1"),
			setup:    func(f *fakeV1) { f.shutdownErr = errCloud },
			wantErrs: []error{errCloud}, wantCalls: []string{"InstanceShutdownByProviderID(fake://i-1)"}},
		{name: "instance gone keeps InstanceNotFound", node: testNode("n1", "fake://i-9"),
			wantErrs: []error{cloudprovider.InstanceNotFound}, wantCalls: []string{"InstanceShutdownByProviderID(fake://i-9)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeV1()
			if tt.setup != nil {
				tt.setup(f)
			}
			got, err := InstancesV2FromV1("fake", f, f).InstanceShutdown(context.Background(), tt.node)
			if tt.wantErrs != nil {
				wantErr(t, err, tt.wantErrs...)
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("shutdown = %v, want %v", got, tt.want)
			}
			wantCalls(t, f, tt.wantCalls...)
		})
	}
}

func TestV1AdapterInstanceMetadata(t *testing.T) {
	t.Parallel()
	full := &cloudprovider.InstanceMetadata{ProviderID: "fake://i-1", InstanceType: "m.small",
		NodeAddresses: m1.addrs, Zone: "zone-a", Region: "region-1"}
	byID := []string{"NodeAddressesByProviderID(fake://i-1)", "InstanceTypeByProviderID(fake://i-1)", "GetZoneByProviderID(fake://i-1)"}
	tests := []struct {
		name      string
		node      *corev1.Node
		noZones   bool
		setup     func(*fakeV1)
		want      *cloudprovider.InstanceMetadata
		wantErrs  []error
		wantCalls []string
	}{
		{name: "by the node's providerID", node: testNode("n1", "fake://i-1"), want: full, wantCalls: byID},
		{name: "providerID built from InstanceID", node: testNode("n1", ""), want: full,
			wantCalls: append([]string{"InstanceID(n1)"}, byID...)},
		{name: "without Zones, no zone", node: testNode("n1", "fake://i-1"), noZones: true,
			want:      &cloudprovider.InstanceMetadata{ProviderID: "fake://i-1", InstanceType: "m.small", NodeAddresses: m1.addrs},
			wantCalls: byID[:2]},
		{name: "falls back to the node name", node: testNode("n1", "fake://i-1"),
			setup: func(f *fakeV1) { f.byIDErr, f.zoneIDErr = errCloud, errCloud }, want: full,
			wantCalls: []string{
				"NodeAddressesByProviderID(fake://i-1)", "NodeAddresses(n1)",
				"InstanceTypeByProviderID(fake://i-1)", "InstanceType(n1)",
				"GetZoneByProviderID(fake://i-1)", "GetZoneByNodeName(n1)",
			}},
		{name: "InstanceID not implemented: by name only, no providerID", node: testNode("n1", ""),
			setup: func(f *fakeV1) { f.idErr = cloudprovider.NotImplemented },
			want: &cloudprovider.InstanceMetadata{InstanceType: "m.small", NodeAddresses: m1.addrs,
				Zone: "zone-a", Region: "region-1"},
			wantCalls: []string{"InstanceID(n1)", "NodeAddresses(n1)", "InstanceType(n1)", "GetZoneByNodeName(n1)"}},
		{name: "InstanceID not found", node: testNode("n2", ""),
			wantErrs: []error{cloudprovider.InstanceNotFound}, wantCalls: []string{"InstanceID(n2)"}},
		{name: "InstanceID fails", node: testNode("n1", ""), setup: func(f *fakeV1) { f.idErr = errCloud },
			wantErrs: []error{errCloud}, wantCalls: []string{"InstanceID(n1)"}},
		{name: "addresses fail both ways", node: testNode("n1", "fake://i-1"),
			setup:     func(f *fakeV1) { f.byIDErr, f.byNameErr = errCloud, cloudprovider.InstanceNotFound },
			wantErrs:  []error{errCloud, cloudprovider.InstanceNotFound},
			wantCalls: []string{"NodeAddressesByProviderID(fake://i-1)", "NodeAddresses(n1)"}},
		{name: "zone fails both ways", node: testNode("n1", "fake://i-1"),
			setup:     func(f *fakeV1) { f.zoneIDErr, f.zoneNameErr = errCloud, errCloud },
			wantErrs:  []error{errCloud},
			wantCalls: append(byID[:2:2], "GetZoneByProviderID(fake://i-1)", "GetZoneByNodeName(n1)")},
		{name: "name-only lookup fails", node: testNode("n1", ""),
			setup:     func(f *fakeV1) { f.idErr, f.byNameErr = cloudprovider.NotImplemented, errCloud },
			wantErrs:  []error{errCloud},
			wantCalls: []string{"InstanceID(n1)", "NodeAddresses(n1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeV1()
			if tt.setup != nil {
				tt.setup(f)
			}
			var zones cloudprovider.Zones = f
			if tt.noZones {
				zones = nil
			}
			got, err := InstancesV2FromV1("fake", f, zones).InstanceMetadata(context.Background(), tt.node)
			if tt.wantErrs != nil {
				wantErr(t, err, tt.wantErrs...)
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("metadata = %+v, want %+v", got, tt.want)
			}
			wantCalls(t, f, tt.wantCalls...)
		})
	}
}

func TestV1AdapterInstanceTypeFailure(t *testing.T) {
	t.Parallel()
	f := newFakeV1()
	f.byID = map[string]fakeInstance{"fake://i-1": m1}
	calls := 0
	// Addresses succeed by provider ID; the type lookups fail both ways.
	in := &typeFailing{fakeV1: f, calls: &calls}
	_, err := InstancesV2FromV1("fake", in, nil).InstanceMetadata(context.Background(), testNode("n1", "fake://i-1"))
	wantErr(t, err, errCloud, cloudprovider.InstanceNotFound)
	if calls != 2 {
		t.Errorf("instance type asked %d times, want 2 (by provider ID, then by name)", calls)
	}
}

type typeFailing struct {
	*fakeV1
	calls *int
}

func (f *typeFailing) InstanceTypeByProviderID(context.Context, string) (string, error) {
	*f.calls++
	return "", errCloud
}

func (f *typeFailing) InstanceType(context.Context, types.NodeName) (string, error) {
	*f.calls++
	return "", cloudprovider.InstanceNotFound
}

func TestV1AdapterKeepsRetryError(t *testing.T) {
	t.Parallel()
	f := newFakeV1()
	f.existsErr = cloudproviderapi.NewRetryError("slow down", 7*time.Second)
	_, err := InstancesV2FromV1("fake", f, f).InstanceExists(context.Background(), testNode("n1", "fake://i-1"))
	if d, ok := RetryAfter(err); !ok || d != 7*time.Second {
		t.Fatalf("RetryAfter(%v) = %v, %v; want 7s, true", err, d, ok)
	}
}
