package kit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
)

// TestResolveRequiresAClient: a controller without a client is a wiring
// error, named by the controller.
func TestResolveRequiresAClient(t *testing.T) {
	t.Parallel()
	_, err := kit.Deps{}.Resolve("some-controller")
	if err == nil || !strings.Contains(err.Error(), "some-controller") || !strings.Contains(err.Error(), "client") {
		t.Fatalf("Resolve without a client: %v, want an error naming the controller and the client", err)
	}
}

// TestResolveFillsTheShared: the resolved Deps have a recorder and a clock,
// and the client writes as the controller (its field manager).
func TestResolveFillsTheShared(t *testing.T) {
	t.Parallel()
	var manager string
	cl := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			co := &client.CreateOptions{}
			co.ApplyOptions(opts)
			manager = co.FieldManager
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	d, err := kit.Deps{Client: cl}.Resolve("some-controller")
	if err != nil {
		t.Fatal(err)
	}
	if d.Recorder == nil || d.Clock == nil {
		t.Fatalf("resolved recorder %v, clock %v: want both set", d.Recorder, d.Clock)
	}
	d.Recorder.Eventf(&corev1.Node{}, nil, corev1.EventTypeNormal, "R", "A", "dropped") // nil recorder: dropped, no panic
	if err := d.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}); err != nil {
		t.Fatal(err)
	}
	if manager != "some-controller" {
		t.Errorf("field manager %q, want the controller's name", manager)
	}
}

func TestOrDefault(t *testing.T) {
	t.Parallel()
	if got := kit.OrDefault(0, 10); got != 10 {
		t.Errorf("OrDefault(0, 10) = %d", got)
	}
	if got := kit.OrDefault(-1*time.Second, time.Minute); got != time.Minute {
		t.Errorf("OrDefault(-1s, 1m) = %v", got)
	}
	if got := kit.OrDefault(3*time.Second, time.Minute); got != 3*time.Second {
		t.Errorf("OrDefault(3s, 1m) = %v", got)
	}
	if got := kit.OrDefault(0.0, 0.5); got != 0.5 {
		t.Errorf("OrDefault(0, 0.5) = %v", got)
	}
}
