package profile

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// TestRoutesPersisted: a double's route table is what a test reads from
// its state directory after each change; hcloud's refuses a target whose
// private address is not among the route's addresses.
func TestRoutesPersisted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRoutes(state{dir: dir}, true)
	route := &cloudprovider.Route{TargetNode: "n1", DestinationCIDR: "10.244.1.0/24"}
	if err := r.CreateRoute(ctx, "k8s", "uid", route); err == nil {
		t.Fatal("a route without the target's InternalIP was created")
	}
	route.TargetNodeAddresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: NodeInternalIP}}
	if err := r.CreateRoute(ctx, "k8s", "uid", route); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRoutes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Route{{Node: "n1", CIDR: "10.244.1.0/24"}}; !slices.Equal(got, want) {
		t.Fatalf("persisted %v, want %v", got, want)
	}
	listed, err := r.ListRoutes(ctx, "k8s")
	if err != nil || len(listed) != 1 || listed[0].TargetNode != "n1" || listed[0].DestinationCIDR != "10.244.1.0/24" {
		t.Fatalf("listed %v, %v", listed, err)
	}
	if err := r.DeleteRoute(ctx, "k8s", listed[0]); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadRoutes(dir); err != nil || len(got) != 0 {
		t.Fatalf("after the delete: %v, %v", got, err)
	}
	if err := r.DeleteRoute(ctx, "k8s", listed[0]); err == nil {
		t.Fatal("deleting a route that is gone succeeded")
	}
}
