package profile

import (
	"strings"
	"testing"
)

// TestSetups checks each double's reading of its inputs against what the
// vendor's provider source does with them: what it refuses, with which
// message, and when it has routes.
func TestSetups(t *testing.T) {
	token := strings.Repeat("x", 64)
	cases := []struct {
		vendor string
		env    map[string]string
		config string // "" is no --cloud-config
		routes bool
		err    string
	}{
		{vendor: "hcloud", err: `environment variable "HCLOUD_TOKEN" is required`},
		{vendor: "hcloud", env: map[string]string{"HCLOUD_TOKEN": token}},
		{vendor: "hcloud", env: map[string]string{"HCLOUD_TOKEN": token, "HCLOUD_NETWORK": "k8s"}, routes: true},
		{vendor: "hcloud", env: map[string]string{"HCLOUD_TOKEN": token, "HCLOUD_NETWORK": "k8s", "HCLOUD_NETWORK_ROUTES_ENABLED": "false"}},
		{vendor: "hcloud", env: map[string]string{"HCLOUD_TOKEN": token, "HCLOUD_NETWORK": "k8s", "ROBOT_ENABLED": "true"}, err: "using Routes with Robot is not supported"},
		{vendor: "hcloud", env: map[string]string{"HCLOUD_TOKEN": token, "ROBOT_ENABLED": "yes please"}, err: "failed to parse ROBOT_ENABLED"},
		{vendor: "digitalocean", err: `environment variable "DO_ACCESS_TOKEN" is required`},
		{vendor: "digitalocean", env: map[string]string{"DO_ACCESS_TOKEN": "t"}},
		{vendor: "digitalocean", env: map[string]string{"DO_ACCESS_TOKEN": "t", "PUBLIC_ACCESS_FIREWALL_TAGS": "k8s"},
			err: `environment variable "PUBLIC_ACCESS_FIREWALL_NAME" is required when managing firewalls`},
		{vendor: "aws", routes: true},
		{vendor: "aws", env: map[string]string{"AWS_EC2_METADATA_DISABLED": "true"}, err: `access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable`},
		{vendor: "aws", env: map[string]string{"AWS_EC2_METADATA_DISABLED": "true"}, config: "[Global]\nRegion = eu-west-1\n", routes: true},
		{vendor: "openstack", err: "no OpenStack cloud provider config file given"},
		{vendor: "openstack", config: "[Global]\nauth-url = https://keystone.example.com:5000/v3\n"},
		{vendor: "openstack", config: "[Global]\nauth-url = https://keystone.example.com:5000/v3\n[Route]\nrouter-id = r-1\n", routes: true},
		{vendor: "azure", err: "InitializeCloudFromConfig: cannot initialize from nil config"},
		{vendor: "azure", config: "{}", routes: true},
		{vendor: "kube-vip", err: "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"},
		{vendor: "kube-vip", env: map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}},
	}
	for _, c := range cases {
		var v Vendor
		for _, x := range Vendors() {
			if x.Name == c.vendor {
				v = x
			}
		}
		var config []byte
		if c.config != "" {
			config = []byte(c.config)
		}
		s, err := v.setup(func(k string) string { return c.env[k] }, config)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s with %v, config %q: error %v, want one saying %q", c.vendor, c.env, c.config, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s with %v, config %q: %v", c.vendor, c.env, c.config, err)
		case err == nil && s.routes != c.routes:
			t.Errorf("%s with %v, config %q: routes %v, want %v", c.vendor, c.env, c.config, s.routes, c.routes)
		}
	}
}

// TestByCommand: the mains take a vendor's flag defaults only under its
// own binary's name.
func TestByCommand(t *testing.T) {
	for argv0, want := range map[string]string{
		"/bin/digitalocean-cloud-controller-manager": "digitalocean",
		"kube-vip-cloud-provider":                    "kube-vip",
		"/usr/local/bin/cloud-controller-manager":    "",
		"hcloud": "",
	} {
		v, ok := ByCommand(argv0)
		if ok != (want != "") || v.Name != want {
			t.Errorf("ByCommand(%q) = %q, %v; want %q", argv0, v.Name, ok, want)
		}
		if ok && v.FlagDefaults["cloud-provider"] != v.Provider {
			t.Errorf("%s's main defaults --cloud-provider to %q, want its provider %q", v.Name, v.FlagDefaults["cloud-provider"], v.Provider)
		}
	}
}

// TestHcloudRoutesNeedClusterCIDR: hcloud's newRoutes parses the cluster
// CIDR its main passes as one CIDR; without one (or with a dual-stack
// pair) its Routes() is false though a network is configured.
func TestHcloudRoutesNeedClusterCIDR(t *testing.T) {
	t.Setenv("HCLOUD_TOKEN", strings.Repeat("x", 64))
	t.Setenv("HCLOUD_NETWORK", "k8s")
	t.Setenv(StateDirEnv, "")
	v, ok := ByProvider("hcloud")
	if !ok {
		t.Fatal("no hcloud profile")
	}
	for cidr, want := range map[string]bool{"": false, "10.244.0.0/16": true, "10.244.0.0/16,fd00::/48": false} {
		p, err := New(v)(nil, cidr)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := p.Routes(); got != want {
			t.Errorf("--cluster-cidr=%q: Routes() %v, want %v", cidr, got, want)
		}
	}
}
