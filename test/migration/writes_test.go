package migration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// writes records, from the API server's own watch, every change a
// controller manager makes to Nodes and Services (a change is a new or
// changed managedFields entry of a manager other than kwok, which heartbeats
// the nodes) and every Event created, while it runs.
type writes struct {
	mu      sync.Mutex
	changes []string // "node/NAME by MANAGER"
	events  []string // "REASON OBJECT"
	stop    context.CancelFunc
	done    sync.WaitGroup
}

func (c *cluster) recordWrites(t *testing.T) *writes {
	t.Helper()
	ctx, cancel := context.WithCancel(c.ctx)
	w := &writes{stop: cancel}
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := c.cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := c.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string][]metav1.ManagedFieldsEntry{}
	for i := range nodes.Items {
		last["node/"+nodes.Items[i].Name] = nodes.Items[i].ManagedFields
	}
	for i := range svcs.Items {
		last["service/"+svcs.Items[i].Name] = svcs.Items[i].ManagedFields
	}
	nw, err := c.cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := c.cs.CoreV1().Services(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: svcs.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	ew, err := c.cs.CoreV1().Events("").Watch(ctx, metav1.ListOptions{ResourceVersion: evs.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var lastMu sync.Mutex
	onObject := func(kind string, obj metav1.Object) {
		key := kind + "/" + obj.GetName()
		lastMu.Lock()
		before := last[key]
		last[key] = obj.GetManagedFields()
		lastMu.Unlock()
		for _, m := range changedManagers(before, obj.GetManagedFields()) {
			w.mu.Lock()
			w.changes = append(w.changes, key+" by "+m)
			w.mu.Unlock()
		}
	}
	consume := func(ch <-chan watch.Event, f func(watch.Event)) {
		defer w.done.Done()
		for ev := range ch {
			f(ev)
		}
	}
	w.done.Add(3)
	go consume(nw.ResultChan(), func(ev watch.Event) {
		if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Bookmark {
			onObject("node", n)
		}
	})
	go consume(sw.ResultChan(), func(ev watch.Event) {
		if s, ok := ev.Object.(*corev1.Service); ok && ev.Type != watch.Bookmark {
			onObject("service", s)
		}
	})
	go consume(ew.ResultChan(), func(ev watch.Event) {
		if e, ok := ev.Object.(*corev1.Event); ok && ev.Type == watch.Added {
			w.mu.Lock()
			from := e.ReportingController
			if from == "" {
				from = e.Source.Component
			}
			w.events = append(w.events, e.Reason+" "+strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name+" from "+from)
			w.mu.Unlock()
		}
	})
	t.Cleanup(func() { nw.Stop(); sw.Stop(); ew.Stop(); cancel() })
	w.stop = func() { nw.Stop(); sw.Stop(); ew.Stop(); cancel() }
	return w
}

// changedManagers lists the managers, other than kwok, whose managedFields
// entry is new or different.
func changedManagers(before, after []metav1.ManagedFieldsEntry) []string {
	key := func(e metav1.ManagedFieldsEntry) string {
		return e.Manager + "|" + string(e.Operation) + "|" + e.Subresource
	}
	old := map[string]string{}
	for _, e := range before {
		old[key(e)] = entryString(e)
	}
	var out []string
	for _, e := range after {
		if strings.HasPrefix(e.Manager, "kwok") {
			continue
		}
		if old[key(e)] != entryString(e) {
			out = append(out, e.Manager+"("+string(e.Operation)+e.Subresource+")")
		}
	}
	return out
}

func entryString(e metav1.ManagedFieldsEntry) string {
	s := ""
	if e.Time != nil {
		s = e.Time.String()
	}
	if e.FieldsV1 != nil {
		s += e.FieldsV1.GetRawString()
	}
	return s
}

// end stops recording and returns the changes and events seen.
func (w *writes) end() (changes, events []string) {
	w.stop()
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	changes = append([]string(nil), w.changes...)
	events = append([]string(nil), w.events...)
	sort.Strings(changes)
	sort.Strings(events)
	return changes, events
}

func summary(lines []string) string {
	if len(lines) == 0 {
		return "none"
	}
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	var out []string
	for l, n := range count {
		out = append(out, fmt.Sprintf("%s ×%d", l, n))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
