package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What each vendor's constructor reads and refuses, from its provider
// source at the commit test/vendors/testdata/README.md names. A double
// refuses with the vendor's own message, so that a test can show a missing
// input stopping both controller managers the same way. What the doubles
// take as given: a metadata service where the vendor asks one (the
// manifests run on the vendor's machines), and a cloud that answers.

// hcloudSetup: hcloud/cloud.go NewCloud and internal/config: HCLOUD_TOKEN
// (or HCLOUD_TOKEN_FILE) is required; routes are on when HCLOUD_NETWORK
// names a network, unless HCLOUD_NETWORK_ROUTES_ENABLED=false, and never
// with Robot; CreateRoute refuses a target whose private address is not
// among the route's target addresses.
func hcloudSetup(getenv func(string) string, _ []byte) (settings, error) {
	var errs []error
	token, err := lookupEnvWithFile(getenv, "HCLOUD_TOKEN")
	if err != nil {
		errs = append(errs, err)
	}
	robot, err := envBool(getenv, "ROBOT_ENABLED", false)
	if err != nil {
		errs = append(errs, err)
	}
	s := settings{checkGateway: true}
	if getenv("HCLOUD_NETWORK") != "" {
		if s.routes, err = envBool(getenv, "HCLOUD_NETWORK_ROUTES_ENABLED", true); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return settings{}, errors.Join(errs...)
	}
	if token == "" {
		errs = append(errs, fmt.Errorf("environment variable %q is required", "HCLOUD_TOKEN"))
	}
	if robot && s.routes {
		errs = append(errs, errors.New("using Routes with Robot is not supported"))
	}
	return s, errors.Join(errs...)
}

// lookupEnvWithFile reads name, or the file $name_FILE names, as hcloud's
// envutil.LookupEnvWithFile does.
func lookupEnvWithFile(getenv func(string) string, name string) (string, error) {
	v, file := getenv(name), getenv(name+"_FILE")
	switch {
	case file == "":
		return v, nil
	case v != "":
		return "", fmt.Errorf("both %s and %s_FILE are set", name, name)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read %s_FILE: %w", name, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// digitaloceanSetup: do/cloud.go newCloud: DO_ACCESS_TOKEN is required,
// the public access firewall needs both its name and its tags; no routes.
// The region comes from REGION or the droplet's metadata service.
func digitaloceanSetup(getenv func(string) string, _ []byte) (settings, error) {
	if getenv("DO_ACCESS_TOKEN") == "" {
		return settings{}, fmt.Errorf("environment variable %q is required", "DO_ACCESS_TOKEN")
	}
	if qps := getenv("DO_API_RATE_LIMIT_QPS"); qps != "" {
		if _, err := strconv.ParseFloat(qps, 64); err != nil {
			return settings{}, fmt.Errorf("failed to parse value from environment variable %s: %w", "DO_API_RATE_LIMIT_QPS", err)
		}
	}
	name, tags := getenv("PUBLIC_ACCESS_FIREWALL_NAME"), getenv("PUBLIC_ACCESS_FIREWALL_TAGS")
	if name == "" && tags != "" {
		return settings{}, fmt.Errorf("environment variable %q is required when managing firewalls", "PUBLIC_ACCESS_FIREWALL_NAME")
	}
	if name != "" && tags == "" {
		return settings{}, fmt.Errorf("environment variable %q is required when managing firewalls", "PUBLIC_ACCESS_FIREWALL_TAGS")
	}
	return settings{}, nil
}

// awsSetup: pkg/providers/v1/aws.go: the region is the cloud config's
// [Global] Region (or Zone's region), else the instance metadata
// service's, which AWS_EC2_METADATA_DISABLED=true turns off (the SDK's
// message); Routes() is always true.
func awsSetup(getenv func(string) string, config []byte) (settings, error) {
	g := iniSection(config, "global")
	if g["region"] == "" && g["zone"] == "" && strings.EqualFold(getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		return settings{}, errors.New(`operation error ec2imds: GetRegion, access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable`)
	}
	return settings{routes: true}, nil
}

// openstackSetup: pkg/openstack/openstack.go ReadConfig needs a cloud
// config; Routes() is true only with [Route] router-id (NewRoutes refuses
// an empty one).
func openstackSetup(_ func(string) string, config []byte) (settings, error) {
	if config == nil {
		return settings{}, errors.New("no OpenStack cloud provider config file given")
	}
	return settings{routes: iniSection(config, "route")["router-id"] != ""}, nil
}

// azureSetup: pkg/provider/azure.go NewCloudFromConfigFile without a
// config; Routes() is always true.
func azureSetup(_ func(string) string, config []byte) (settings, error) {
	if config == nil {
		return settings{}, errors.New("could not init cloud provider azure: InitializeCloudFromConfig: cannot initialize from nil config")
	}
	return settings{routes: true}, nil
}

// kubevipSetup: pkg/provider/provider.go builds its own client from the
// in-cluster configuration, which needs the variables the kubelet sets in
// every pod; KUBEVIP_ENABLE_LOADBALANCERCLASS must parse. No routes.
func kubevipSetup(getenv func(string) string, _ []byte) (settings, error) {
	if lbc := getenv("KUBEVIP_ENABLE_LOADBALANCERCLASS"); lbc != "" {
		if _, err := strconv.ParseBool(lbc); err != nil {
			return settings{}, fmt.Errorf("error parsing value of %s: %s", "KUBEVIP_ENABLE_LOADBALANCERCLASS", err.Error())
		}
	}
	if getenv("KUBERNETES_SERVICE_HOST") == "" || getenv("KUBERNETES_SERVICE_PORT") == "" {
		return settings{}, errors.New("error creating kubernetes client config: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined")
	}
	return settings{}, nil
}

func envBool(getenv func(string) string, name string, def bool) (bool, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("failed to parse %s: %w", name, err)
	}
	return b, nil
}

// iniSection returns the keys of one [section] of a gcfg (INI) config,
// names lower-cased, as AWS' and OpenStack's configs are read
// (case-insensitively).
func iniSection(config []byte, section string) map[string]string {
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(config))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			in = strings.EqualFold(strings.Trim(line, "[] "), section)
		case in:
			k, v, _ := strings.Cut(line, "=")
			out[strings.ToLower(strings.TrimSpace(k))] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return out
}
