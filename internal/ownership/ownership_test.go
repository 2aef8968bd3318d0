package ownership

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"
)

func node(providerID, platform string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if platform != "" {
		n.Annotations = map[string]string{AnnotationPlatform: platform}
	}
	return n
}

type platformCloud struct {
	cloudprovider.Interface
	platforms []string
}

func (c platformCloud) GetSupportedPlatform() []string { return c.platforms }

func TestWithoutAListEveryNodeIsOwned(t *testing.T) {
	t.Parallel()
	p, err := New(nil, &fake.Cloud{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*corev1.Node{node("aws:///z/i-1", ""), node("", ""), node("nonsense", ""), node("", "on-prem")} {
		if v := p.Of(n); v != Owned {
			t.Errorf("%q/%q: %v, want owned (upstream's behaviour)", n.Spec.ProviderID, n.Annotations[AnnotationPlatform], v)
		}
	}
}

func TestVerdicts(t *testing.T) {
	t.Parallel()
	p, err := New([]string{"localcloud"}, &fake.Cloud{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		providerID, platform string
		want                 Verdict
	}{
		{"localcloud://i-1", "", Owned},
		{"LocalCloud://i-1", "", Owned},
		{"aws:///eu-west-1a/i-0abc", "", Foreign},
		{"eks-hybrid:///r/c/n", "", Foreign},
		{"nonsense://x", "", Foreign},
		{"nonsense", "", Foreign},
		{"://x", "", Foreign},
		// The providerID wins over the annotation.
		{"aws:///z/i-1", "localcloud", Foreign},
		{"", "localcloud", Owned},
		{"", "on-prem", Foreign},
		{"", "", Unknown},
	} {
		if got := p.Of(node(tc.providerID, tc.platform)); got != tc.want {
			t.Errorf("providerID %q, platform %q: %v, want %v", tc.providerID, tc.platform, got, tc.want)
		}
	}
}

func TestTheFlagOverridesTheProvidersList(t *testing.T) {
	t.Parallel()
	c := platformCloud{Interface: &fake.Cloud{}, platforms: []string{"localcloud"}}
	own, err := New(nil, c)
	if err != nil || !own.Enabled() || own.Of(node("localcloud://i", "")) != Owned {
		t.Fatalf("provider's list: %v, %v", own.Platforms(), err)
	}
	flag, err := New([]string{"aws", " aws", "gce"}, c)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(flag.Platforms(), ","); got != "aws,gce" {
		t.Fatalf("platforms %q, want aws,gce", got)
	}
	if flag.Of(node("localcloud://i", "")) != Foreign {
		t.Error("a platform the flag leaves out is still owned")
	}
}

func TestBadPlatformNamesAreRefused(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "1aws", "aws/x", "a b", "aws:"} {
		_, err := New([]string{bad}, &fake.Cloud{})
		if err == nil || !strings.Contains(err.Error(), "--cloud-provider-platforms") {
			t.Errorf("%q: err %v, want one naming the flag", bad, err)
		}
	}
}
