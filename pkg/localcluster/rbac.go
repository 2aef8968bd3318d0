package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratus-ccm/stratus/deploy"
)

// RareMarker starts the comment line above an RBAC rule that only a rare
// path uses; the rest of the line names the path.
const RareMarker = "# rare:"

// Rule is one rule of a Role or ClusterRole, with who is bound to it.
type Rule struct {
	// Role is "ClusterRole/name" or "Role/namespace/name".
	Role string
	// Namespace is the Role's namespace, empty for a ClusterRole.
	Namespace string
	// Subjects are the user names bound to the role (ServiceAccounts as
	// system:serviceaccount:ns:name).
	Subjects        []string
	APIGroups       []string `yaml:"apiGroups"`
	Resources       []string `yaml:"resources"`
	Verbs           []string `yaml:"verbs"`
	ResourceNames   []string `yaml:"resourceNames"`
	NonResourceURLs []string `yaml:"nonResourceURLs"`
	// Rare is the rare path the rule's comment names, empty for a rule
	// every run should use.
	Rare string
}

func (r Rule) String() string {
	s := fmt.Sprintf("%s: groups %q resources %q verbs %q", r.Role, r.APIGroups, r.Resources, r.Verbs)
	if len(r.ResourceNames) > 0 {
		s += fmt.Sprintf(" names %q", r.ResourceNames)
	}
	if len(r.NonResourceURLs) > 0 {
		s += fmt.Sprintf(" URLs %q", r.NonResourceURLs)
	}
	return s
}

type rbacDoc struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	RoleRef struct {
		Kind string `yaml:"kind"`
		Name string `yaml:"name"`
	} `yaml:"roleRef"`
	Subjects []struct {
		Kind      string `yaml:"kind"`
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"subjects"`
}

// Rules reads the roles and bindings of rendered manifests, keeping the
// "# rare:" comments that YAML decoders into objects drop.
func Rules(manifest []byte) ([]Rule, error) {
	var rules []Rule
	bound := map[string][]string{}
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("rbac manifest: %w", err)
		}
		var d rbacDoc
		if err := n.Decode(&d); err != nil {
			return nil, fmt.Errorf("rbac manifest: %w", err)
		}
		switch d.Kind {
		case "ClusterRole", "Role":
			rs, err := roleRules(&n, roleKey(d.Kind, d.Metadata.Namespace, d.Metadata.Name), d.Metadata.Namespace)
			if err != nil {
				return nil, err
			}
			rules = append(rules, rs...)
		case "ClusterRoleBinding", "RoleBinding":
			ns := ""
			if d.Kind == "RoleBinding" {
				ns = d.Metadata.Namespace
			}
			key := roleKey(d.RoleRef.Kind, ns, d.RoleRef.Name)
			for _, s := range d.Subjects {
				bound[key] = append(bound[key], subjectUser(s.Kind, s.Namespace, s.Name))
			}
		}
	}
	for i := range rules {
		rules[i].Subjects = bound[rules[i].Role]
	}
	return rules, nil
}

func roleKey(kind, namespace, name string) string {
	if kind == "Role" {
		return "Role/" + namespace + "/" + name
	}
	return kind + "/" + name
}

func subjectUser(kind, namespace, name string) string {
	switch kind {
	case "ServiceAccount":
		return "system:serviceaccount:" + namespace + ":" + name
	case "Group":
		return "group:" + name
	}
	return name
}

// roleRules decodes the rules of one role document, each with the rare
// path its head comment names.
func roleRules(doc *yaml.Node, role, namespace string) ([]Rule, error) {
	m := doc.Content[0]
	var out []Rule
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "rules" {
			continue
		}
		for _, item := range m.Content[i+1].Content {
			r := Rule{Role: role, Namespace: namespace}
			if err := item.Decode(&r); err != nil {
				return nil, fmt.Errorf("%s: rule: %w", role, err)
			}
			for _, line := range strings.Split(item.HeadComment, "\n") {
				if note, ok := strings.CutPrefix(strings.TrimSpace(line), RareMarker); ok {
					r.Rare = strings.TrimSpace(note)
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// InstallRBAC applies the ServiceAccounts, roles and bindings of rendered
// manifests with admin, then waits until the API server's authorizer
// (which learns of RBAC objects through a watch) allows every resource
// rule to every subject bound to it, so that a process started next is
// not refused what the manifests grant.
func InstallRBAC(ctx context.Context, admin *rest.Config, manifest []byte) error {
	objs, err := deploy.Parse(manifest)
	if err != nil {
		return fmt.Errorf("rbac manifest: %w", err)
	}
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool {
		return !slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind())
	})
	if err := deploy.Apply(ctx, admin, objs, deploy.ApplyOptions{}); err != nil {
		return err
	}
	rules, err := Rules(manifest)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return fmt.Errorf("rbac: client: %w", err)
	}
	external, err := externalRoleRules(ctx, cs, objs)
	if err != nil {
		return err
	}
	for _, r := range append(rules, external...) {
		for _, user := range r.Subjects {
			spec := authorizationv1.SubjectAccessReviewSpec{User: user}
			if len(r.NonResourceURLs) > 0 {
				spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: r.NonResourceURLs[0], Verb: r.Verbs[0]}
			} else {
				attr := &authorizationv1.ResourceAttributes{Namespace: r.Namespace, Verb: r.Verbs[0], Group: r.APIGroups[0]}
				attr.Resource, attr.Subresource, _ = strings.Cut(r.Resources[0], "/")
				if len(r.ResourceNames) > 0 {
					attr.Name = r.ResourceNames[0]
				}
				spec.ResourceAttributes = attr
			}
			if err := waitAllowed(ctx, cs, spec); err != nil {
				return fmt.Errorf("rbac: waiting for the API server to allow %s to %s: %w", user, r, err)
			}
		}
	}
	return nil
}

// externalRoleRules returns, for each binding of objs to a role objs do not
// hold (one of the API server's own, such as
// extension-apiserver-authentication-reader), the first rule of that role
// as the server has it, with the binding's subjects: enough to wait for.
func externalRoleRules(ctx context.Context, cs kubernetes.Interface, objs []*unstructured.Unstructured) ([]Rule, error) {
	own := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
			own[roleKey(o.GetKind(), o.GetNamespace(), o.GetName())] = true
		}
	}
	var out []Rule
	for _, o := range objs {
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same roleRef and subjects
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			return nil, fmt.Errorf("rbac: %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		ns := ""
		if o.GetKind() == "RoleBinding" {
			ns = o.GetNamespace()
		}
		key := roleKey(b.RoleRef.Kind, ns, b.RoleRef.Name)
		if own[key] {
			continue
		}
		var rules []rbacv1.PolicyRule
		if b.RoleRef.Kind == "Role" {
			role, err := cs.RbacV1().Roles(ns).Get(ctx, b.RoleRef.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("rbac: %s: %w", key, err)
			}
			rules = role.Rules
		} else {
			role, err := cs.RbacV1().ClusterRoles().Get(ctx, b.RoleRef.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("rbac: %s: %w", key, err)
			}
			rules = role.Rules
		}
		if len(rules) == 0 {
			continue
		}
		r := Rule{Role: key, Namespace: ns, APIGroups: rules[0].APIGroups, Resources: rules[0].Resources,
			Verbs: rules[0].Verbs, ResourceNames: rules[0].ResourceNames, NonResourceURLs: rules[0].NonResourceURLs}
		for _, sub := range b.Subjects {
			r.Subjects = append(r.Subjects, subjectUser(sub.Kind, sub.Namespace, sub.Name))
		}
		out = append(out, r)
	}
	return out, nil
}

func waitAllowed(ctx context.Context, cs kubernetes.Interface, spec authorizationv1.SubjectAccessReviewSpec) error {
	review := &authorizationv1.SubjectAccessReview{Spec: spec}
	if strings.HasPrefix(spec.User, "system:serviceaccount:") {
		review.Spec.Groups = []string{"system:serviceaccounts", "system:authenticated"}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return r.Status.Allowed, nil
	})
}

// ServiceAccountConfig returns a client config for the ServiceAccount
// namespace/name, authenticated by a token from TokenRequest valid for
// ttl: how a process outside the cluster (the sandbox's or a test's
// controller manager) runs with a ServiceAccount's rights and nothing
// more. admin gives the server, its CA and the right to request the token.
// The token is in BearerToken; a caller that must outlive it writes it to
// a file, sets BearerTokenFile (client-go re-reads it) and renews it.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config, namespace, name string, ttl time.Duration) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: client: %w", namespace, name, err)
	}
	seconds := int64(ttl / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}
