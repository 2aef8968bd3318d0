package observe_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratus-ccm/stratus/internal/cloudwrap"
	"github.com/stratus-ccm/stratus/internal/controllerctx"
	"github.com/stratus-ccm/stratus/internal/observe"

	"github.com/stratus-ccm/stratus/pkg/cloud"
)

// everything implements every provider interface and extension, records
// each method that reaches it, and says every load balancer exists and
// would change.
type everything struct {
	mu    sync.Mutex
	calls map[string]int
}

func (p *everything) hit(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[name]++
}

func (p *everything) reached(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[name] > 0
}

func (p *everything) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = nil
}

func (p *everything) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (p *everything) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return p, true }
func (p *everything) Instances() (cloudprovider.Instances, bool)                        { return p, true }
func (p *everything) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return p, true }
func (p *everything) Zones() (cloudprovider.Zones, bool)                                { return p, true }
func (p *everything) Clusters() (cloudprovider.Clusters, bool)                          { return p, true }
func (p *everything) Routes() (cloudprovider.Routes, bool)                              { return p, true }
func (p *everything) ProviderName() string                                              { return "everything" }
func (p *everything) HasClusterID() bool                                                { return true }

func (p *everything) GetLoadBalancer(context.Context, string, *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	p.hit("GetLoadBalancer")
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, true, nil
}

func (p *everything) GetLoadBalancerName(context.Context, string, *corev1.Service) string {
	p.hit("GetLoadBalancerName")
	return "lb-1"
}

func (p *everything) EnsureLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	p.hit("EnsureLoadBalancer")
	return &corev1.LoadBalancerStatus{}, nil
}

func (p *everything) UpdateLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) error {
	p.hit("UpdateLoadBalancer")
	return nil
}

func (p *everything) EnsureLoadBalancerDeleted(context.Context, string, *corev1.Service) error {
	p.hit("EnsureLoadBalancerDeleted")
	return nil
}

func (p *everything) PlanLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) ([]string, error) {
	p.hit("PlanLoadBalancer")
	return []string{"backends: +[i-2] -[]"}, nil
}

func (p *everything) PlanLoadBalancerEndpoints(context.Context, string, *corev1.Service, cloud.EndpointSet) ([]string, error) {
	p.hit("PlanLoadBalancerEndpoints")
	return []string{"endpoints TCP/80: +[192.0.2.10:8080 ready] -[]"}, nil
}

func (p *everything) UnknownAnnotations(*corev1.Service) (unknown, known []string) {
	p.hit("UnknownAnnotations")
	return nil, nil
}

func (p *everything) LoadBalancerIPFamilies() []corev1.IPFamily {
	p.hit("LoadBalancerIPFamilies")
	return []corev1.IPFamily{corev1.IPv4Protocol}
}

func (p *everything) ListLoadBalancers(context.Context, string) ([]cloud.LoadBalancer, error) {
	p.hit("ListLoadBalancers")
	return nil, nil
}

func (p *everything) EndpointTargets(*corev1.Service) (bool, string) {
	p.hit("EndpointTargets")
	return true, ""
}

func (p *everything) EnsureLoadBalancerEndpoints(context.Context, string, *corev1.Service, cloud.EndpointSet) (*corev1.LoadBalancerStatus, error) {
	p.hit("EnsureLoadBalancerEndpoints")
	return &corev1.LoadBalancerStatus{}, nil
}

func (p *everything) ListRoutes(context.Context, string) ([]*cloudprovider.Route, error) {
	p.hit("ListRoutes")
	return nil, nil
}

func (p *everything) CreateRoute(context.Context, string, string, *cloudprovider.Route) error {
	p.hit("CreateRoute")
	return nil
}

func (p *everything) DeleteRoute(context.Context, string, *cloudprovider.Route) error {
	p.hit("DeleteRoute")
	return nil
}

func (p *everything) NodeAddresses(context.Context, types.NodeName) ([]corev1.NodeAddress, error) {
	p.hit("NodeAddresses")
	return nil, nil
}

func (p *everything) NodeAddressesByProviderID(context.Context, string) ([]corev1.NodeAddress, error) {
	p.hit("NodeAddressesByProviderID")
	return nil, nil
}

func (p *everything) InstanceID(context.Context, types.NodeName) (string, error) {
	p.hit("InstanceID")
	return "", nil
}

func (p *everything) InstanceType(context.Context, types.NodeName) (string, error) {
	p.hit("InstanceType")
	return "", nil
}

func (p *everything) InstanceTypeByProviderID(context.Context, string) (string, error) {
	p.hit("InstanceTypeByProviderID")
	return "", nil
}

func (p *everything) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	p.hit("AddSSHKeyToAllInstances")
	return nil
}

func (p *everything) CurrentNodeName(context.Context, string) (types.NodeName, error) {
	p.hit("CurrentNodeName")
	return "", nil
}

func (p *everything) InstanceExistsByProviderID(context.Context, string) (bool, error) {
	p.hit("InstanceExistsByProviderID")
	return true, nil
}

func (p *everything) InstanceShutdownByProviderID(context.Context, string) (bool, error) {
	p.hit("InstanceShutdownByProviderID")
	return false, nil
}

func (p *everything) InstanceExists(context.Context, *corev1.Node) (bool, error) {
	p.hit("InstanceExists")
	return true, nil
}

func (p *everything) InstanceShutdown(context.Context, *corev1.Node) (bool, error) {
	p.hit("InstanceShutdown")
	return false, nil
}

func (p *everything) InstanceMetadata(context.Context, *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	p.hit("InstanceMetadata")
	return &cloudprovider.InstanceMetadata{}, nil
}

func (p *everything) ListInstances(context.Context) ([]cloud.Instance, error) {
	p.hit("ListInstances")
	return nil, nil
}

func (p *everything) GetZone(context.Context) (cloudprovider.Zone, error) {
	p.hit("GetZone")
	return cloudprovider.Zone{}, nil
}

func (p *everything) GetZoneByProviderID(context.Context, string) (cloudprovider.Zone, error) {
	p.hit("GetZoneByProviderID")
	return cloudprovider.Zone{}, nil
}

func (p *everything) GetZoneByNodeName(context.Context, types.NodeName) (cloudprovider.Zone, error) {
	p.hit("GetZoneByNodeName")
	return cloudprovider.Zone{}, nil
}

func (p *everything) ListClusters(context.Context) ([]string, error) {
	p.hit("ListClusters")
	return nil, nil
}

func (p *everything) Master(context.Context, string) (string, error) {
	p.hit("Master")
	return "", nil
}

// mutatingMethods are the provider methods that change the cloud; observe
// mode must refuse each. Every other method of every provider interface
// must be listed in readMethods: a method in neither list fails the test,
// so a new method cannot slip through unclassified.
var mutatingMethods = map[string]bool{
	"EnsureLoadBalancer": true, "UpdateLoadBalancer": true, "EnsureLoadBalancerDeleted": true,
	"EnsureLoadBalancerEndpoints": true, "CreateRoute": true, "DeleteRoute": true, "AddSSHKeyToAllInstances": true,
}

var readMethods = map[string]bool{
	"GetLoadBalancer": true, "GetLoadBalancerName": true, "ListLoadBalancers": true, "ListRoutes": true,
	"NodeAddresses": true, "NodeAddressesByProviderID": true, "InstanceID": true, "InstanceType": true,
	"InstanceTypeByProviderID": true, "CurrentNodeName": true, "InstanceExistsByProviderID": true,
	"InstanceShutdownByProviderID": true, "InstanceExists": true, "InstanceShutdown": true,
	"InstanceMetadata": true, "ListInstances": true, "GetZone": true, "GetZoneByProviderID": true,
	"GetZoneByNodeName": true, "ListClusters": true, "Master": true, "PlanLoadBalancer": true, "PlanLoadBalancerEndpoints": true,
	"UnknownAnnotations": true, "LoadBalancerIPFamilies": true, "EndpointTargets": true,
}

// answeredAsDone are the mutating calls observe mode answers as done
// (they return nothing a controller could lack); the others fail with
// ErrObserveOnly.
var answeredAsDone = map[string]bool{"CreateRoute": true, "DeleteRoute": true}

// stack builds what the daemon builds in observe mode: the instrumented
// wrapper over p, observe mode outside it.
func stack(t *testing.T, p cloudprovider.Interface, rec *observe.Recorder) (*observe.Cloud, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	w, err := cloudwrap.Instrument(p, cloudwrap.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return observe.NewCloud(w, rec, w.CountRefused), reg
}

// refused is how many calls of op the request metric counts as refused.
func refused(t *testing.T, reg *prometheus.Registry, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != cloudwrap.MetricRequestsTotal {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["result"] == cloudwrap.ResultRefused {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// callingController is the controller every call of the test is made for:
// each planned change must name it.
const callingController = "some-controller"

// argFor builds a usable argument of type t.
func argFor(t reflect.Type) reflect.Value {
	switch t {
	case reflect.TypeFor[context.Context]():
		return reflect.ValueOf(controllerctx.With(context.Background(), callingController))
	case reflect.TypeFor[*corev1.Service]():
		return reflect.ValueOf(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "u1"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80}}}})
	case reflect.TypeFor[[]*corev1.Node]():
		return reflect.ValueOf([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}})
	case reflect.TypeFor[*corev1.Node]():
		return reflect.ValueOf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	case reflect.TypeFor[*cloudprovider.Route]():
		return reflect.ValueOf(&cloudprovider.Route{Name: "r1", TargetNode: "n1", DestinationCIDR: "10.0.1.0/24"})
	}
	return reflect.Zero(t)
}

func TestObserveRefusesEveryMutatingCall(t *testing.T) {
	t.Parallel()
	p := &everything{}
	rec, err := observe.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, reg := stack(t, p, rec)

	// Every capability the wrapper hands out, found by reflection on
	// *Cloud: each method without arguments returning (interface, bool).
	errType := reflect.TypeFor[error]()
	surfaces := 0
	cv := reflect.ValueOf(c)
	for i := range cv.NumMethod() {
		m := cv.Type().Method(i)
		ft := m.Type
		if ft.NumIn() != 1 || ft.NumOut() != 2 || ft.Out(0).Kind() != reflect.Interface || ft.Out(1).Kind() != reflect.Bool {
			continue
		}
		out := cv.Method(i).Call(nil)
		if !out[1].Bool() {
			t.Errorf("Cloud.%s: not exposed over a provider that has it", m.Name)
			continue
		}
		surfaces++
		impl, iface := out[0], ft.Out(0)
		for j := range iface.NumMethod() {
			meth := iface.Method(j)
			name := m.Name + "()." + meth.Name
			if mutatingMethods[meth.Name] == readMethods[meth.Name] {
				t.Errorf("%s is not classified: add it to mutatingMethods (observe mode refuses it) or readMethods", name)
				continue
			}
			mt := impl.MethodByName(meth.Name).Type()
			args := make([]reflect.Value, mt.NumIn())
			for k := range args {
				args[k] = argFor(mt.In(k))
			}
			p.reset()
			res := impl.MethodByName(meth.Name).Call(args)
			var callErr error
			if last := res[len(res)-1]; last.Type() == errType && !last.IsNil() {
				callErr = last.Interface().(error)
			}
			if mutatingMethods[meth.Name] {
				if p.reached(meth.Name) {
					t.Errorf("%s reached the provider in observe mode", name)
				}
				if answeredAsDone[meth.Name] {
					if callErr != nil {
						t.Errorf("%s returned %v, want nil (planned, answered as done)", name, callErr)
					}
				} else if !errors.Is(callErr, observe.ErrObserveOnly) {
					t.Errorf("%s returned %v, want ErrObserveOnly", name, callErr)
				}
				if got := refused(t, reg, meth.Name); got == 0 {
					t.Errorf("%s: refusal not counted", name)
				}
			} else if !p.reached(meth.Name) {
				t.Errorf("%s (a read) did not reach the provider in observe mode (err %v)", name, callErr)
			}
		}
	}
	if surfaces < 8 {
		t.Errorf("found %d capabilities on observe.Cloud, want at least 8 (LoadBalancer, Routes, Instances, InstancesV2, Zones, Clusters and the extensions)", surfaces)
	}
	var planned []string
	for _, ch := range rec.Changes() {
		planned = append(planned, ch.String())
	}
	for _, want := range []string{"would update load-balancer lb-1", "would delete load-balancer lb-1", "would create route n1", "would delete route n1", "would update instance"} {
		if !strings.Contains(strings.Join(planned, "\n"), want+" ") {
			t.Errorf("planned changes %q lack %q", planned, want)
		}
	}
	for _, ch := range rec.Changes() {
		if ch.Controller != callingController {
			t.Errorf("%s: controller %q, want %q, the one the call's context names", ch, ch.Controller, callingController)
		}
	}
}

// A refused call whose context names no controller is planned for an
// unknown one, not for a guess.
func TestObserveWithoutControllerPlansForUnknown(t *testing.T) {
	t.Parallel()
	rec, err := observe.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := stack(t, &everything{}, rec)
	routes, _ := c.Routes()
	r := &cloudprovider.Route{Name: "r1", TargetNode: "n1", DestinationCIDR: "10.0.1.0/24"}
	if err := routes.CreateRoute(context.Background(), "c", "", r); err != nil {
		t.Fatalf("CreateRoute in observe mode: %v, want nil (planned, answered as done)", err)
	}
	changes := rec.Changes()
	if len(changes) != 1 || changes[0].Controller != observe.UnknownController {
		t.Errorf("planned %v, want one route creation for %q", changes, observe.UnknownController)
	}
}

// inSync plans no change: an ensure in observe mode then answers with the
// current status, as the provider would, and records nothing.
type inSync struct{ everything }

func (p *inSync) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return p, true }
func (p *inSync) PlanLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) ([]string, error) {
	p.hit("PlanLoadBalancer")
	return nil, nil
}

func (p *inSync) PlanLoadBalancerEndpoints(context.Context, string, *corev1.Service, cloud.EndpointSet) ([]string, error) {
	p.hit("PlanLoadBalancerEndpoints")
	return nil, nil
}

func TestObserveEnsureInSyncPlansNothing(t *testing.T) {
	t.Parallel()
	p := &inSync{}
	rec, err := observe.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := stack(t, p, rec)
	lb, _ := c.LoadBalancer()
	svc := argFor(reflect.TypeFor[*corev1.Service]()).Interface().(*corev1.Service)
	st, err := lb.EnsureLoadBalancer(context.Background(), "c", svc, nil)
	if err != nil || st == nil || st.Ingress[0].IP != "192.0.2.1" {
		t.Fatalf("ensure in sync: %v, %v", st, err)
	}
	if err := lb.UpdateLoadBalancer(context.Background(), "c", svc, nil); err != nil {
		t.Fatalf("update in sync: %v", err)
	}
	et, ok := c.EndpointTargeter()
	if !ok {
		t.Fatal("no endpoint targets over a provider that has them")
	}
	if st, err := et.EnsureLoadBalancerEndpoints(context.Background(), "c", svc, nil); err != nil || st == nil || st.Ingress[0].IP != "192.0.2.1" {
		t.Fatalf("endpoint ensure in sync: %v, %v", st, err)
	}
	if p.reached("EnsureLoadBalancer") || p.reached("UpdateLoadBalancer") || p.reached("EnsureLoadBalancerEndpoints") {
		t.Error("a mutating call reached the provider")
	}
	if n := len(rec.Changes()); n != 0 {
		t.Errorf("%d changes planned for a load balancer in sync: %v", n, rec.Changes())
	}
}

// With the provider's EndpointPlanner, an endpoint ensure of an existing
// load balancer records the provider's plan as the change.
func TestObserveEndpointEnsurePlansTheProvidersDiff(t *testing.T) {
	t.Parallel()
	p := &everything{}
	rec, err := observe.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := stack(t, p, rec)
	et, _ := c.EndpointTargeter()
	svc := argFor(reflect.TypeFor[*corev1.Service]()).Interface().(*corev1.Service)
	ctx := argFor(reflect.TypeFor[context.Context]()).Interface().(context.Context)
	if _, err := et.EnsureLoadBalancerEndpoints(ctx, "c", svc, nil); !errors.Is(err, observe.ErrObserveOnly) {
		t.Fatalf("err = %v, want ErrObserveOnly", err)
	}
	changes := rec.Changes()
	if len(changes) != 1 || !strings.Contains(changes[0].Diff, "+[192.0.2.10:8080 ready]") || p.reached("EnsureLoadBalancerEndpoints") {
		t.Errorf("planned %+v, want the provider's plan, nothing made", changes)
	}
}
