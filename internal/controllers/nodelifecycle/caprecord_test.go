package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stratus-ccm/stratus/internal/controllers/kit"
	cloudfake "github.com/stratus-ccm/stratus/pkg/cloud/fake"
)

// recordKey is where the tests keep the record, as the daemon names it
// for its default Lease.
var recordKey = types.NamespacedName{Namespace: "kube-system", Name: RecordName("cloud-controller-manager")}

// twoOfTen is a cap of 2 deletions per window for a 10-Node cluster.
var twoOfTen = DeletionCap{MaxShare: 0.1, MaxZoneShare: 1, Min: 2, Window: 10 * time.Minute}

// recordWorld is one API server (a fake client) and one cloud, shared by
// the controller instances a test starts, as replicas share a cluster.
type recordWorld struct {
	t     *testing.T
	cl    client.WithWatch
	cloud *cloudfake.Cloud
	clk   *clocktesting.FakeClock
	// failGet and failWrite make the API server fail the record's reads
	// and writes (503); forbid refuses them (403, RBAC without the
	// record); conflicts counts the writes it answered with a conflict.
	failGet, failWrite, forbid atomic.Bool
	conflicts                  atomic.Int64
}

// newRecordWorld has ten Nodes in zone a: gone are NotReady with their
// instance gone, the others Ready with theirs. objs are further objects.
func newRecordWorld(t *testing.T, gone []string, objs ...client.Object) *recordWorld {
	t.Helper()
	w := &recordWorld{t: t, cloud: cloudfake.New(), clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	for i := range 10 - len(gone) {
		name := fmt.Sprintf("alive-%d", i)
		w.cloud.PutInstance(inst(name, false))
		objs = append(objs, zoned(name, "a", corev1.ConditionTrue))
	}
	for _, name := range gone {
		objs = append(objs, zoned(name, "a", corev1.ConditionFalse))
	}
	refused := func(key client.ObjectKey) error {
		if w.forbid.Load() {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, key.Name, errors.New("not granted"))
		}
		return apierrors.NewServiceUnavailable("etcd is down")
	}
	w.cl = fake.NewClientBuilder().WithObjects(objs...).WithIndex(&corev1.Node{}, attentionField, needsAttention).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.ConfigMap); ok && (w.failGet.Load() || w.forbid.Load()) {
					return refused(key)
				}
				return c.Get(ctx, key, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.ConfigMap); ok && (w.failWrite.Load() || w.forbid.Load()) {
					return refused(client.ObjectKeyFromObject(obj))
				}
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*corev1.ConfigMap); ok && (w.failWrite.Load() || w.forbid.Load()) {
					return refused(client.ObjectKeyFromObject(obj))
				}
				err := c.Update(ctx, obj, opts...)
				if apierrors.IsConflict(err) {
					w.conflicts.Add(1)
				}
				return err
			},
		}).Build()
	return w
}

// instance starts one controller instance over the world: a new leader,
// or the same process restarted, with nothing in memory.
func (w *recordWorld) instance() *harness {
	w.t.Helper()
	rec := events.NewFakeRecorder(1000)
	c, err := New(Deps{Deps: kit.Deps{Client: w.cl, Recorder: rec, Clock: w.clk}, Instances: w.cloud, Lister: w.cloud, APIReader: w.cl},
		Config{Period: 1, Cap: twoOfTen, Record: recordKey})
	if err != nil {
		w.t.Fatal(err)
	}
	return &harness{c: c, client: w.cl, rec: rec}
}

// stored reads the record as the API server holds it.
func (w *recordWorld) stored() (*corev1.ConfigMap, []deletion) {
	w.t.Helper()
	cm := &corev1.ConfigMap{}
	if err := w.cl.Get(context.Background(), recordKey, cm); err != nil {
		w.t.Fatalf("read the record: %v", err)
	}
	done, err := parseRecord(cm, w.clk.Now(), twoOfTen.Window)
	if err != nil {
		w.t.Fatalf("the stored record does not parse: %v\n%v", err, cm.Data)
	}
	return cm, done
}

func (w *recordWorld) exists(name string) bool {
	w.t.Helper()
	err := w.cl.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Node{})
	if client.IgnoreNotFound(err) != nil {
		w.t.Fatal(err)
	}
	return err == nil
}

// TestRecordRoundTrip: the first deletions create the record, labelled as
// Stratus', with each deletion's time, Node, UID and zone; it reads back
// as written, and what falls out of the window is pruned.
func TestRecordRoundTrip(t *testing.T) {
	w := newRecordWorld(t, []string{"gone-0", "gone-1"})
	if sum, err := w.instance().c.sync(context.Background(), pass{}); err != nil || sum.Deleted != 2 {
		t.Fatalf("%+v %v; want both gone Nodes deleted", sum, err)
	}
	cm, done := w.stored()
	if cm.Labels[LabelManagedBy] != ManagedBy || cm.Labels[LabelComponent] != recordComponent {
		t.Errorf("record labels %v, want it marked as Stratus'", cm.Labels)
	}
	want := []deletion{
		{at: w.clk.Now(), node: "gone-0", uid: "uid-gone-0", zone: "a"},
		{at: w.clk.Now(), node: "gone-1", uid: "uid-gone-1", zone: "a"},
	}
	if len(done) != len(want) {
		t.Fatalf("record %v, want %v", done, want)
	}
	for i := range want {
		if !done[i].at.Equal(want[i].at) || done[i].node != want[i].node || done[i].uid != want[i].uid || done[i].zone != want[i].zone {
			t.Errorf("entry %d = %+v, want %+v", i, done[i], want[i])
		}
	}
	data, err := encodeRecord(done)
	if err != nil || data != cm.Data[RecordKey] {
		t.Errorf("encoding what was read = %q, %v; want what is stored, %q", data, err, cm.Data[RecordKey])
	}
	if late, err := parseRecord(cm, w.clk.Now().Add(twoOfTen.Window+time.Second), twoOfTen.Window); err != nil || len(late) != 0 {
		t.Errorf("a window later the record holds %v, %v; want nothing", late, err)
	}
}

// TestSecondInstanceHonoursFirstsRecord: the failover the record is for.
// The first leader deletes the cap's worth; a second instance, with
// nothing in memory, reads its record and deletes no more within the
// window, then deletes the rest once the window has moved.
func TestSecondInstanceHonoursFirstsRecord(t *testing.T) {
	w := newRecordWorld(t, []string{"gone-0", "gone-1", "gone-2", "gone-3"})
	if sum, _ := w.instance().c.sync(context.Background(), pass{}); sum.Deleted != 2 || sum.Held != 2 {
		t.Fatalf("first leader: %+v; want 2 deleted, 2 held", sum)
	}
	w.clk.Step(time.Minute)
	next := w.instance()
	sum, err := next.c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 0 || sum.Held != 2 {
		t.Fatalf("second leader within the window: %+v %v; want nothing deleted", sum, err)
	}
	if ev := next.events(); !strings.Contains(ev, "Warning "+ReasonDeletionCapped) || !strings.Contains(ev, "2 of the cluster's 8 Nodes deleted") {
		t.Errorf("events %q: want %s counting the first leader's deletions", ev, ReasonDeletionCapped)
	}
	w.clk.Step(twoOfTen.Window)
	if sum, err := next.c.sync(context.Background(), pass{}); err != nil || sum.Deleted != 2 {
		t.Fatalf("second leader after the window: %+v %v; want the other 2 deleted", sum, err)
	}
	if _, done := w.stored(); len(done) != 2 || done[0].node == "gone-0" || done[1].node == "gone-0" {
		t.Errorf("record %+v: want only the second leader's deletions, the first's pruned", done)
	}
}

// TestRecordConflictReadsAgain: two instances at once (a former leader
// finishing its period). The stale one's write conflicts with the other's;
// it reads the record again and then holds the deletion the cap no longer
// allows.
func TestRecordConflictReadsAgain(t *testing.T) {
	w := newRecordWorld(t, []string{"gone-0"})
	stale, fresh := w.instance(), w.instance()
	if sum, _ := stale.c.sync(context.Background(), pass{}); sum.Deleted != 1 {
		t.Fatalf("stale: %+v; want gone-0 deleted", sum)
	}
	for _, name := range []string{"gone-1", "gone-2"} {
		if err := w.cl.Create(context.Background(), zoned(name, "a", corev1.ConditionFalse)); err != nil {
			t.Fatal(err)
		}
	}
	// The fresh instance reads the record (gone-0) and fills the window.
	if sum, _ := fresh.c.sync(context.Background(), pass{}); sum.Deleted != 1 || sum.Held != 1 {
		t.Fatalf("fresh: %+v; want 1 deleted, 1 held", sum)
	}
	// The stale one still counts only gone-0, so it tries; the write
	// conflicts, and the record read again holds it.
	sum, err := stale.c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 0 || sum.Held != 1 {
		t.Fatalf("stale after the fresh one's write: %+v %v; want nothing deleted", sum, err)
	}
	if w.conflicts.Load() == 0 {
		t.Error("the stale instance's write did not conflict")
	}
	if _, done := w.stored(); len(done) != 2 {
		t.Errorf("record %+v, want the 2 deletions made", done)
	}
}

// TestMalformedRecordCountsAsFull: a record that does not parse is named,
// field and value, in an event on it; the window counts as full for a
// window from then (whatever it counted has left it by then), and the
// next deletion after that writes a well-formed record.
func TestMalformedRecordCountsAsFull(t *testing.T) {
	for name, c := range map[string]struct{ data, want string }{
		"time":     {`[{"time":"yesterday","node":"n"}]`, `data["deletions"][0].time="yesterday"`},
		"node":     {`[{"time":"2026-01-01T00:00:00Z"}]`, `data["deletions"][0].node=""`},
		"future":   {`[{"time":"2099-01-01T00:00:00Z","node":"n"}]`, `data["deletions"][0].time="2099-01-01T00:00:00Z"`},
		"not json": {`{"n": 1}`, `data["deletions"]="{\"n\": 1}"`},
		"missing":  {"", `data["deletions"] is missing`},
	} {
		t.Run(name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: recordKey.Namespace, Name: recordKey.Name}}
			if c.data != "" {
				cm.Data = map[string]string{RecordKey: c.data}
			}
			w := newRecordWorld(t, []string{"gone-0"}, cm)
			h := w.instance()
			sum, err := h.c.sync(context.Background(), pass{})
			if err != nil || sum.Deleted != 0 || sum.Held != 1 {
				t.Fatalf("%+v %v; want the deletion held", sum, err)
			}
			ev := h.events()
			if !strings.Contains(ev, "Warning "+ReasonRecordMalformed) || !strings.Contains(ev, c.want) {
				t.Errorf("events %q: want %s naming %s", ev, ReasonRecordMalformed, c.want)
			}
			if !strings.Contains(ev, "Warning "+ReasonDeletionCapped) {
				t.Errorf("events %q: want %s on the Node", ev, ReasonDeletionCapped)
			}
			w.clk.Step(twoOfTen.Window - time.Second)
			if sum, _ := h.c.sync(context.Background(), pass{}); sum.Deleted != 0 {
				t.Fatalf("within the window: %+v; want nothing deleted", sum)
			}
			w.clk.Step(time.Second)
			if sum, err := h.c.sync(context.Background(), pass{}); err != nil || sum.Deleted != 1 {
				t.Fatalf("a window after reading it: %+v %v; want gone-0 deleted", sum, err)
			}
			if _, done := w.stored(); len(done) != 1 || done[0].node != "gone-0" {
				t.Errorf("record %+v, want the one deletion, well-formed", done)
			}
		})
	}
}

// TestRecordFailureBlocksDeletion: when the record cannot be read or
// written, no Node is deleted (none unrecorded): the period fails, with a
// warning on the Node, and a later one deletes once the record works.
func TestRecordFailureBlocksDeletion(t *testing.T) {
	for name, fail := range map[string]func(*recordWorld) *atomic.Bool{
		"read":  func(w *recordWorld) *atomic.Bool { return &w.failGet },
		"write": func(w *recordWorld) *atomic.Bool { return &w.failWrite },
	} {
		t.Run(name, func(t *testing.T) {
			w := newRecordWorld(t, []string{"gone-0"})
			fail(w).Store(true)
			h := w.instance()
			sum, err := h.c.sync(context.Background(), pass{})
			if err == nil || !strings.Contains(err.Error(), recordKey.String()) || sum.Deleted != 0 {
				t.Fatalf("%+v %v; want the period to fail naming the record, nothing deleted", sum, err)
			}
			if !w.exists("gone-0") {
				t.Fatal("gone-0 deleted without its deletion recorded")
			}
			if ev := h.events(); !strings.Contains(ev, "Warning "+ReasonDeletionNotRecorded) || strings.Contains(ev, ReasonDeletingNode) {
				t.Errorf("events %q: want %s and no deletion", ev, ReasonDeletionNotRecorded)
			}
			fail(w).Store(false)
			if sum, err := h.c.sync(context.Background(), pass{}); err != nil || sum.Deleted != 1 {
				t.Fatalf("once the record works: %+v %v; want gone-0 deleted", sum, err)
			}
			if _, done := w.stored(); len(done) != 1 {
				t.Errorf("record %+v, want gone-0's deletion", done)
			}
		})
	}
}

// TestForbiddenRecordCountsInMemory: an identity whose RBAC grants no
// ConfigMaps (made for upstream's controller manager) still deletes gone
// Nodes under the cap, counted in memory as upstream would, and is told
// once that the cap does not survive a leader change.
func TestForbiddenRecordCountsInMemory(t *testing.T) {
	w := newRecordWorld(t, []string{"gone-0", "gone-1", "gone-2"})
	w.forbid.Store(true)
	h := w.instance()
	sum, err := h.c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 2 || sum.Held != 1 {
		t.Fatalf("%+v %v; want two deleted and one held by the in-memory cap (2 per window)", sum, err)
	}
	if ev := h.events(); strings.Count(ev, ReasonRecordForbidden) != 1 || strings.Contains(ev, ReasonDeletionNotRecorded) {
		t.Errorf("events %q: want one %s and no %s", ev, ReasonRecordForbidden, ReasonDeletionNotRecorded)
	}
	w.forbid.Store(false)
	if err := w.cl.Get(context.Background(), recordKey, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("reading the record after a refused run: %v, want not found", err)
	}
}

// TestRecordedNodeTakesNoNewSlot: a leader recorded a deletion and died
// before the delete. The next one deletes that Node within the window (it
// is counted already) but no other beyond the cap.
func TestRecordedNodeTakesNoNewSlot(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339Nano)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: recordKey.Namespace, Name: recordKey.Name},
		Data: map[string]string{RecordKey: `[{"time":"` + at + `","node":"deleted","uid":"uid-deleted","zone":"a"},` +
			`{"time":"` + at + `","node":"gone-0","uid":"uid-gone-0","zone":"a"}]`},
	}
	w := newRecordWorld(t, []string{"gone-0", "gone-1"}, cm)
	sum, err := w.instance().c.sync(context.Background(), pass{})
	if err != nil || sum.Deleted != 1 || sum.Held != 1 || w.exists("gone-0") || !w.exists("gone-1") {
		t.Fatalf("%+v %v; want gone-0 deleted on its recorded slot, gone-1 held", sum, err)
	}
	if _, done := w.stored(); len(done) != 2 {
		t.Errorf("record %+v: want gone-0 counted once", done)
	}
}

func TestRecordNeedsAPIReader(t *testing.T) {
	_, err := New(Deps{Deps: kit.Deps{Client: fake.NewClientBuilder().Build()}, Instances: cloudfake.New()}, Config{Period: 1, Record: recordKey})
	if err == nil || !strings.Contains(err.Error(), "APIReader") {
		t.Errorf("New without an APIReader = %v, want an error naming it", err)
	}
}
