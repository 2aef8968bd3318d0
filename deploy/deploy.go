package deploy

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Files of the rendered manifests, by their path under deploy/.
const (
	Default    = "stratus.yaml"
	DaemonSet  = "daemonset/stratus.yaml"
	Monitoring = "monitoring/stratus-monitoring.yaml"
	// AllControllersRBAC is the RBAC of an install with every controller
	// on (routes and node IPAM too), as the sandbox runs Stratus.
	AllControllersRBAC = "rbac/all-controllers.yaml"
)

// Namespace is the namespace the manifests are rendered for.
const Namespace = "kube-system"

// FieldManager is the field manager of the objects Apply writes.
const FieldManager = "stratus-deploy"

//go:embed stratus.yaml daemonset/stratus.yaml monitoring/stratus-monitoring.yaml rbac/all-controllers.yaml
var files embed.FS

// Manifest returns the rendered YAML of one of the files above.
func Manifest(name string) ([]byte, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	return data, nil
}

// Objects returns the objects of one of the files above, in the order the
// file lists them (Helm's install order: RBAC before the workload).
func Objects(name string) ([]*unstructured.Unstructured, error) {
	data, err := Manifest(name)
	if err != nil {
		return nil, err
	}
	objs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("deploy: %s: %w", name, err)
	}
	return objs, nil
}

// Parse decodes a multi-document YAML stream; empty documents are skipped.
func Parse(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d: no apiVersion or kind", i)
		}
		out = append(out, u)
	}
}

// rbacKinds are the kinds RBAC returns.
var rbacKinds = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// RBAC returns the default install's ServiceAccounts, roles and bindings:
// what a process running as the chart's ServiceAccount may do.
func RBAC() ([]*unstructured.Unstructured, error) { return RBACOf(Default) }

// RBACOf returns the ServiceAccounts, roles and bindings of one of the
// files above.
func RBACOf(name string) ([]*unstructured.Unstructured, error) {
	objs, err := Objects(name)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if rbacKinds[o.GetKind()] {
			out = append(out, o)
		}
	}
	return out, nil
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// DryRun asks the server to validate and admit without persisting.
	DryRun bool
}

// Apply server-side applies objs in order with strict field validation, so
// an unknown or duplicated field is an error rather than silently dropped.
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, o ApplyOptions) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("deploy: discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("deploy: dynamic client: %w", err)
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: new(true), FieldValidation: metav1.FieldValidationStrict}
	if o.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("deploy: %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return fmt.Errorf("deploy: %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts); err != nil {
			return fmt.Errorf("deploy: apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
