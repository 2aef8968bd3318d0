package objcache

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keptNodeStatus are the NodeStatus fields the cache keeps, with who reads
// them. A field in neither this table nor StrippedNodeStatus (a new one in
// a Kubernetes release) fails TestNodeStatusFieldsAreClassified until
// someone decides.
var keptNodeStatus = map[string]string{
	"Capacity":         "providers may size instances from it",
	"Allocatable":      "providers may read it beside capacity",
	"Phase":            "small; deprecated but kept as the API server sends it",
	"Conditions":       "Ready and NetworkUnavailable: node lifecycle, service node set, routes",
	"Addresses":        "node controller (refresh), providers (load balancer backends)",
	"DaemonEndpoints":  "small; providers may read the kubelet port",
	"NodeInfo":         "providers read the system UUID to find the machine",
	"RuntimeHandlers":  "small; kept so the cached Node is the API's but for the stripped lists",
	"Features":         "small; same",
	"DeclaredFeatures": "small; same",
}

func TestNodeStatusFieldsAreClassified(t *testing.T) {
	stripped := StrippedNodeStatus()
	typ := reflect.TypeFor[corev1.NodeStatus]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		_, kept := keptNodeStatus[name]
		strip := slices.Contains(stripped, name)
		switch {
		case kept && strip:
			t.Errorf("NodeStatus.%s is both kept and stripped", name)
		case !kept && !strip:
			t.Errorf("NodeStatus.%s is neither kept nor stripped: decide whether the cache needs it", name)
		}
	}
	for _, name := range stripped {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("StrippedNodeStatus names %q, which NodeStatus has not", name)
		}
	}
}

// fullNode has every NodeStatus field set, and managedFields.
func fullNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{ProviderID: "localcloud://i-1"},
		Status: corev1.NodeStatus{
			Capacity:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Allocatable:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Phase:            corev1.NodeRunning,
			Conditions:       []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}},
			Addresses:        []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			DaemonEndpoints:  corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:         corev1.NodeSystemInfo{SystemUUID: "uuid-1", KubeletVersion: "v1.36.3"},
			Images:           []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1}},
			VolumesInUse:     []corev1.UniqueVolumeName{"kubernetes.io/csi/vol-1"},
			VolumesAttached:  []corev1.AttachedVolume{{Name: "kubernetes.io/csi/vol-1", DevicePath: "/dev/xvdb"}},
			Config:           &corev1.NodeConfigStatus{Error: "none"},
			RuntimeHandlers:  []corev1.NodeRuntimeHandler{{Name: "runc"}},
			Features:         &corev1.NodeFeatures{},
			DeclaredFeatures: []string{"f"},
		},
	}
}

func TestTransformDropsOnlyTheStrippedFields(t *testing.T) {
	in := fullNode()
	want := fullNode()
	out, err := Transform()(in)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(*corev1.Node)
	if !ok {
		t.Fatalf("transform returned %T", out)
	}
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("metadata or spec changed: %+v", got)
	}
	gv, wv := reflect.ValueOf(got.Status), reflect.ValueOf(want.Status)
	for i := range gv.NumField() {
		name := gv.Type().Field(i).Name
		if slices.Contains(StrippedNodeStatus(), name) {
			if !gv.Field(i).IsZero() {
				t.Errorf("status.%s kept, want it stripped", name)
			}
			continue
		}
		if gv.Field(i).IsZero() || !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("status.%s = %v, want it kept as %v", name, gv.Field(i).Interface(), wv.Field(i).Interface())
		}
	}
	// Other kinds lose managedFields only.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if _, err := Transform()(svc); err != nil || svc.ManagedFields != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("service after transform: %+v, %v", svc, err)
	}
}

// TestNoReaderOfStrippedFields fails when code outside tests reads a
// stripped field: it would read an empty value from the cache. It parses
// every Go file of the module (not _test.go, not other modules) and looks
// for `<x>.Status.<field>` and, for the two names no other type here
// uses, `<x>.VolumesInUse` and `<x>.VolumesAttached`; assignments (the
// transform's own clearing) are writes, not reads.
func TestNoReaderOfStrippedFields(t *testing.T) {
	root := moduleRoot(t)
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		hits = append(hits, strippedReads(t, rel, src)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		t.Errorf("%s reads a Node status field the cache strips (objcache.StrippedNodeStatus): keep the field or read the Node from the API", h)
	}
}

// The scan finds what it looks for: a read through .Status, a read of a
// volume list through a variable, and not the transform's own writes.
func TestStrippedReadsFindsReads(t *testing.T) {
	src := []byte(`package p
func f(n *v1.Node, s *v1.NodeStatus) int {
	s.VolumesInUse = nil
	n.Status.Images = nil
	return len(n.Status.Images) + len(s.VolumesAttached) + len(n.Status.Addresses)
}`)
	got := strippedReads(t, "p.go", src)
	if len(got) != 2 || !strings.Contains(got[0], "Images") || !strings.Contains(got[1], "VolumesAttached") {
		t.Fatalf("strippedReads = %v, want the read of Images and of VolumesAttached", got)
	}
}

func strippedReads(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	stripped := StrippedNodeStatus()
	written := map[ast.Expr]bool{}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for _, l := range as.Lhs {
				written[l] = true
			}
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || written[sel] || !slices.Contains(stripped, sel.Sel.Name) {
			return true
		}
		parent, viaStatus := sel.X.(*ast.SelectorExpr)
		viaStatus = viaStatus && parent.Sel.Name == "Status"
		if viaStatus || strings.HasPrefix(sel.Sel.Name, "Volumes") {
			out = append(out, fset.Position(sel.Pos()).String()+": ."+sel.Sel.Name)
		}
		return true
	})
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for !exists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	return dir
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
