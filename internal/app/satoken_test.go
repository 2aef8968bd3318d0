package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// tokenSource returns a source whose TokenRequests the reactor answers.
func tokenSource(now time.Time, react func(*authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)) (*saTokenSource, *int) {
	cs := fake.NewClientset()
	calls := 0
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" || a.GetNamespace() != ServiceAccountNamespace {
			return false, nil, nil
		}
		calls++
		tr, err := react(a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest))
		return true, tr, err
	})
	return &saTokenSource{ctx: context.Background(), sas: cs.CoreV1().ServiceAccounts(ServiceAccountNamespace),
		name: "cloud-node-controller", now: func() time.Time { return now }}, &calls
}

func TestTokenRenewedBeforeExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		granted time.Duration
		renewAt time.Duration
	}{
		"one hour as asked":     {time.Hour, 48 * time.Minute},
		"the API server's cap":  {30 * time.Minute, 24 * time.Minute},
		"skewed clock: floored": {time.Minute, 8 * time.Minute},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src, calls := tokenSource(now, func(tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
				if tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != tokenExpirationSeconds {
					t.Errorf("asked for %v seconds, want %d", tr.Spec.ExpirationSeconds, tokenExpirationSeconds)
				}
				tr.Status = authenticationv1.TokenRequestStatus{Token: "tok", ExpirationTimestamp: metav1.NewTime(now.Add(c.granted))}
				return tr, nil
			})
			tok, err := src.Token()
			if err != nil {
				t.Fatal(err)
			}
			if tok.AccessToken != "tok" || tok.TokenType != "Bearer" || *calls != 1 {
				t.Fatalf("token %+v after %d requests", tok, *calls)
			}
			if got := tok.Expiry.Sub(now); got != c.renewAt {
				t.Fatalf("renewed after %v, want %v", got, c.renewAt)
			}
		})
	}
}

func TestTokenErrorsNameTheServiceAccount(t *testing.T) {
	gr := schema.GroupResource{Resource: "serviceaccounts"}
	cases := map[string]struct {
		err     error
		want    string
		missing bool
	}{
		"missing":   {apierrors.NewNotFound(gr, "cloud-node-controller"), "not found", true},
		"forbidden": {apierrors.NewForbidden(gr, "cloud-node-controller", errors.New("no")), "create on serviceaccounts/token", false},
		"other":     {apierrors.NewServiceUnavailable("down"), "token for ServiceAccount", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src, _ := tokenSource(time.Now(), func(*authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
				return nil, c.err
			})
			_, err := src.Token()
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range []string{"kube-system/cloud-node-controller", c.want, "--use-service-account-credentials"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if errors.Is(err, errServiceAccountMissing) != c.missing {
				t.Errorf("errors.Is(missing) = %t, want %t", !c.missing, c.missing)
			}
			if !errors.Is(err, c.err) {
				t.Errorf("error chain lost the API error: %v", err)
			}
		})
	}
}

// TestTokenSourceRecreatesADeletedServiceAccount: as upstream's client
// builder, the source creates the ServiceAccount whenever a token request
// finds it missing, not only at start, so that one deleted while Stratus
// runs (by hand, or by uninstalling manifests that had shipped it) comes
// back at the next request.
func TestTokenSourceRecreatesADeletedServiceAccount(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cs := fake.NewClientset()
	sas := cs.CoreV1().ServiceAccounts(ServiceAccountNamespace)
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		if _, err := cs.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, ServiceAccountNamespace, "node-controller"); err != nil {
			return true, nil, err
		}
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "tok", ExpirationTimestamp: metav1.NewTime(now.Add(time.Hour))}}, nil
	})
	src := &saTokenSource{ctx: context.Background(), sas: sas, name: "node-controller", now: func() time.Time { return now }}
	for i := range 2 {
		tok, err := src.Token()
		if err != nil || tok.AccessToken != "tok" {
			t.Fatalf("request %d: %v, %v", i, tok, err)
		}
		if err := sas.Delete(context.Background(), "node-controller", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("request %d left no ServiceAccount: %v", i, err)
		}
	}
}
