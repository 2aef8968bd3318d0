package testbed

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WrittenBy reports whether obj's managedFields (as the API server returns
// them, not the cache's stripped copy) hold an entry of manager for
// subresource ("" for the object itself, "status" for its status). A
// controller's writes carry its name as the field manager, so this is how
// a test tells which controller wrote what.
func WrittenBy(obj metav1.Object, manager, subresource string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == manager && e.Subresource == subresource
	})
}

// Managers lists obj's field managers as "manager" or
// "manager/subresource", for a failure message.
func Managers(obj metav1.Object) []string {
	out := make([]string, 0, len(obj.GetManagedFields()))
	for _, e := range obj.GetManagedFields() {
		s := e.Manager
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	return out
}
