// Package serving owns the secure port every replica serves, as upstream's
// controller managers do: k8s.io/apiserver's SecureServingInfo behind
// delegated authentication and authorization, /livez and /readyz (open),
// /metrics, /configz (upstream's CloudControllerManagerConfiguration from
// the flags) and the debug pages (/debug/explain, observe mode's plan)
// behind authorization, and the check beside it that says which
// TokenReview or SubjectAccessReview permission the delegated identities
// lack. The wiring package (internal/app) adds it to the manager with Add;
// it reads the options and the leader package's Lease lock, and knows no
// controller.
package serving
