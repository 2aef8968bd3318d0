package vendors_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/stratus-ccm/stratus/deploy"
)

// container is one entry of a testdata/<vendor>/*.args.yaml file: a
// workload container's command, args and env as its vendor publishes
// them, and where it mounts Secrets.
type container struct {
	Workload           string          `json:"workload"`
	Container          string          `json:"container"`
	ServiceAccountName string          `json:"serviceAccountName"`
	Command            []string        `json:"command"`
	Args               []string        `json:"args"`
	Env                []corev1.EnvVar `json:"env"`
	SecretVolumes      []secretVolume  `json:"secretVolumes"`
}

// secretVolume is a volumeMount of the container joined with its volume,
// for the volumes that are Secrets (a cloud config).
type secretVolume struct {
	MountPath  string `json:"mountPath"`
	SecretName string `json:"secretName"`
}

// vendorContainer reads the one container of testdata/<vendor>/<file>.args.yaml.
func vendorContainer(t *testing.T, vendor, file string) container {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", vendor, file+".args.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		t.Fatalf("%s/%s: %v", vendor, file, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var cs []container
	if err := dec.Decode(&cs); err != nil {
		t.Fatalf("%s/%s: %v", vendor, file, err)
	}
	if len(cs) != 1 {
		t.Fatalf("%s/%s holds %d containers, want 1", vendor, file, len(cs))
	}
	return cs[0]
}

// vendorRBAC reads testdata/<vendor>/<file>.rbac.yaml for each file, the
// items of a List flattened.
func vendorRBAC(t *testing.T, vendor string, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", vendor, f+".rbac.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := deploy.Parse(data)
		if err != nil {
			t.Fatalf("%s/%s: %v", vendor, f, err)
		}
		for _, o := range objs {
			if !o.IsList() {
				out = append(out, o)
				continue
			}
			l, err := o.ToList()
			if err != nil {
				t.Fatalf("%s/%s: %v", vendor, f, err)
			}
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no RBAC in %v", vendor, files)
	}
	return out
}

// daemonName is the name the image runs the daemon under, as its
// entrypoint and on its PATH.
const daemonName = "cloud-controller-manager"

// inImage is what a container of c runs in the Stratus image, and what
// besides the image the swap had to change: nothing when the container
// sets only args, or a command the image resolves to the daemon; the
// command when it names the vendor's binary by path (the image has no such
// file, so the entrypoint runs instead); the first arg when it is the
// vendor's binary (an image without an entrypoint runs its args).
func inImage(c container) (args []string, changed string) {
	switch {
	case len(c.Command) > 0 && (c.Command[0] == daemonName || c.Command[0] == "/usr/local/bin/"+daemonName):
		return append(slices.Clone(c.Command[1:]), c.Args...), ""
	case len(c.Command) > 0:
		return append(slices.Clone(c.Command[1:]), c.Args...), "command " + c.Command[0]
	case len(c.Args) > 0 && !strings.HasPrefix(c.Args[0], "-"):
		return slices.Clone(c.Args[1:]), "first arg " + c.Args[0]
	}
	return slices.Clone(c.Args), ""
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(NAME) with the container's environment variable, as
// the kubelet does; a reference to a variable env lacks fails the test.
func expand(t *testing.T, args []string, env map[string]string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = envRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				t.Fatalf("arg %q refers to $(%s), which the case's env lacks", a, name)
			}
			return v
		})
	}
	return out
}

// buildVendorCCM builds cmd/vendor-ccm and returns it as the image's
// entrypoint runs the daemon: through a cloud-controller-manager symlink.
func buildVendorCCM(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "vendor-ccm")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/vendor-ccm").CombinedOutput(); err != nil {
		t.Fatalf("build vendor-ccm: %v\n%s", err, out)
	}
	link := filepath.Join(dir, daemonName)
	if err := os.Symlink("vendor-ccm", link); err != nil {
		t.Fatal(err)
	}
	return link
}
