package vendors_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stratus-ccm/stratus/deploy"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
	"github.com/stratus-ccm/stratus/pkg/testbed"
	"github.com/stratus-ccm/stratus/test/vendors/profile"
)

// swap is one vendor manifest whose image is replaced by Stratus'.
type swap struct {
	vendor, file string
	rbac         []string
	// changed is what the swap changes besides the image (inImage), as
	// testdata/README.md lists it.
	changed string
	// added are args the operator adds in the swap: the --cloud-provider
	// a vendor's own main defaults (DigitalOcean's, kube-vip's), which the
	// Stratus image, built for no vendor, does not (docs/migration.md). A
	// vendor's own pkg/ccm binary sets it (ccm.Config.FlagDefaults), as
	// the profile test runs it.
	added []string
	// secrets are the Secrets the operator creates for the manifest, by
	// name and key: the credentials its env refers to, the cloud config
	// it mounts.
	secrets map[string]map[string]string
	// missing is how a missing input (a credential, the cloud config)
	// shows, under the vendor's provider, in either implementation.
	missing missingInput
	// lease is the Lease the daemon takes with these args; empty with
	// --leader-elect=false.
	lease string
	// initializes: the args run the node controller (Azure's disable it),
	// so a new Node is initialized.
	initializes bool
	// perController: the args set --use-service-account-credentials, and
	// the vendor's RBAC leaves the controllers' ServiceAccounts to
	// kube-apiserver's bootstrap roles: the daemon creates them, a
	// LoadBalancer Service gets its address, and the Node and the Service
	// show the controllers' core events.
	perController bool
	// nodeManager: the vendor initializes Nodes with a node manager of
	// its own (Azure's cloud-node-manager DaemonSet), for which the test
	// stands in.
	nodeManager bool
	// routes: the args configure cloud routes and the vendor's provider,
	// with the inputs its manifest gives, has Routes.
	routes bool
}

// TestVendorManifestsRunStratus runs each vendor's published container
// arguments, unchanged but for what inImage says the image swap changes,
// with the Stratus image's entrypoint (a pkg/ccm binary linking a stand-in
// under the vendor's provider name, invoked as cloud-controller-manager),
// as the vendor's ServiceAccount under the vendor's published RBAC only,
// against a real API server: the daemon starts and stays up, answers the
// kubelet's probe, takes the Lease its args name, and initializes a Node
// where its args run the node controller. As in test/e2e's
// TestDefaultManifestRunsStratus, what a pod gets from its node is supplied
// by hand: the ServiceAccount's token in a kubeconfig, the container's env
// (the Secrets it refers to created first), the cloud config of its Secret
// volume for --cloud-config, the secure port on loopback at a free port.
//
// kube-vip's manifest passes no --cloud-provider (its main sets the
// default; the Stratus image is built for no vendor): the table adds it, as
// docs/migration.md tells the operator to; its provider returns no
// instances, so its Node is left to others. DigitalOcean's, likewise
// without --cloud-provider, has RBAC that cannot read
// kube-system/extension-apiserver-authentication: the daemon starts
// without the client and front-proxy CAs and says so (bearer tokens still
// authenticate its secure port).
func TestVendorManifestsRunStratus(t *testing.T) {
	bin := buildVendorCCM(t)
	for _, c := range runnableSwaps() {
		t.Run(c.vendor+"/"+c.file, func(t *testing.T) { c.run(t, bin) })
	}
}

// runnableSwaps are the vendor manifests a pkg/ccm binary runs unchanged
// but for the image swap.
func runnableSwaps() []swap {
	return []swap{
		{vendor: "hcloud", file: "ccm", rbac: []string{"ccm"}, initializes: true, secrets: hcloudSecrets(),
			missing: missingInput{env: map[string]string{"HCLOUD_TOKEN": ""}, message: `environment variable "HCLOUD_TOKEN" is required`}},
		{vendor: "hcloud", file: "ccm-networks", rbac: []string{"ccm-networks"}, initializes: true, secrets: hcloudSecrets(), routes: true},
		{vendor: "aws", file: "aws-cloud-controller-manager-daemonset",
			rbac:  []string{"service-account", "cluster-role", "cluster-role-binding", "apiserver-authentication-reader-role-binding"},
			lease: "cloud-controller-manager", initializes: true, perController: true,
			missing: missingInput{env: map[string]string{"AWS_EC2_METADATA_DISABLED": "true"},
				message: `access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable`}},
		{vendor: "kube-vip", file: "kube-vip-cloud-controller", rbac: []string{"kube-vip-cloud-controller"},
			changed: "command /kube-vip-cloud-provider", added: []string{"--cloud-provider=kubevip"}, lease: "kube-vip-cloud-controller",
			missing: missingInput{env: map[string]string{"KUBERNETES_SERVICE_HOST": ""},
				message: "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"}},
		{vendor: "digitalocean", file: "v0.1.68", rbac: []string{"v0.1.68"},
			changed: "command /bin/digitalocean-cloud-controller-manager", added: []string{"--cloud-provider=digitalocean"}, initializes: true,
			secrets: map[string]map[string]string{"digitalocean": {"access-token": "dop_v1_0123456789abcdef"}},
			missing: missingInput{env: map[string]string{"DO_ACCESS_TOKEN": ""}, message: `environment variable "DO_ACCESS_TOKEN" is required`}},
		{vendor: "azure", file: "cloud-controller-manager", rbac: []string{"cloud-controller-manager"}, lease: "cloud-controller-manager",
			secrets: map[string]map[string]string{"azure-cloud-config": {"azure.json": azureJSON}}, routes: true, nodeManager: true,
			missing: missingInput{dropArg: "--cloud-config=", message: "InitializeCloudFromConfig: cannot initialize from nil config"}},
		{vendor: "openstack", file: "openstack-cloud-controller-manager-ds",
			rbac:    []string{"openstack-cloud-controller-manager-ds", "cloud-controller-manager-roles", "cloud-controller-manager-role-bindings"},
			changed: "first arg /bin/openstack-cloud-controller-manager",
			secrets: map[string]map[string]string{"cloud-config": {"cloud.conf": openstackConf}},
			lease:   "cloud-controller-manager", initializes: true,
			missing: missingInput{dropArg: "--cloud-config=", message: "no OpenStack cloud provider config file given"}},
	}
}

// missingInput is one input of a vendor's provider taken away: env
// variables set (empty is unset, as every vendor reads them), or an arg
// dropped; message is what the vendor's provider says.
type missingInput struct {
	env     map[string]string
	dropArg string
	message string
}

func hcloudSecrets() map[string]map[string]string {
	return map[string]map[string]string{"hcloud": {"token": strings.Repeat("0123456789abcdef", 4), "network": "k8s"}}
}

// azureJSON and openstackConf are cloud configs as the vendors document
// them (Azure's azure.json with a managed identity, OpenStack's cloud.conf
// with an application credential); the doubles need them present.
const (
	azureJSON = `{"cloud": "AzurePublicCloud", "tenantId": "00000000-0000-0000-0000-000000000000", ` +
		`"subscriptionId": "00000000-0000-0000-0000-000000000000", "resourceGroup": "k8s", "location": "westeurope", ` +
		`"useManagedIdentityExtension": true, "vnetName": "k8s-vnet", "subnetName": "k8s-subnet", ` +
		`"securityGroupName": "k8s-nsg", "routeTableName": "k8s-routes", "loadBalancerSku": "standard"}`
	openstackConf = "[Global]\nauth-url = https://keystone.example.com:5000/v3\n" +
		"application-credential-id = 0123456789abcdef\napplication-credential-secret = secret\nregion = RegionOne\n"
)

func (c swap) run(t *testing.T, bin string) {
	env := testbed.Start(t)
	ctx := testbed.Context(t, 3*time.Minute)
	ctr := vendorContainer(t, c.vendor, c.file)
	args, changed := inImage(ctr)
	if changed != c.changed {
		t.Fatalf("the swap changes %q besides the image, want %q", changed, c.changed)
	}
	if err := deploy.Apply(ctx, env.Config, vendorRBAC(t, c.vendor, c.rbac...), deploy.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	createSecrets(ctx, t, env, c.secrets)
	pd := podFor(ctx, t, env, ctr, append(args, c.added...))
	args = pd.args
	setProcessEnv(t, pd.env)
	port := testbed.FreePort(t)
	p := testbed.StartProcess(t, filepath.Join(t.TempDir(), "ccm.log"), bin,
		append(args, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))...)
	poll := func(what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if p.Exited() {
				log, _ := os.ReadFile(p.LogFile)
				return false, fmt.Errorf("the daemon with %v exited:\n%s", args, log)
			}
			return cond(ctx)
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("the daemon answering the kubelet's probe on /healthz", func(ctx context.Context) (bool, error) {
		return healthz(ctx, port) == http.StatusOK, nil
	})
	if c.lease != "" {
		poll("the daemon holding the Lease kube-system/"+c.lease, func(ctx context.Context) (bool, error) {
			l, err := env.Clientset.CoordinationV1().Leases("kube-system").Get(ctx, c.lease, metav1.GetOptions{})
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
		})
	}
	if !c.initializes {
		return
	}
	if _, err := localcluster.CreateNode(ctx, env.Clientset, "worker", localcluster.NodeOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("node worker initialized", func(ctx context.Context) (bool, error) {
		n, err := env.Clientset.CoreV1().Nodes().Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
		return n.Spec.ProviderID == c.vendor+"://worker" && !tainted, nil
	})
	if c.perController {
		checkPerController(ctx, t, env, poll)
	}
}

// checkPerController: under the vendor's RBAC and kube-apiserver's
// bootstrap roles alone, the controllers ran as upstream's ServiceAccounts
// (which the daemon created, as upstream's does), and their events, core
// v1 as the vendor's role grants, are on the Node and on a Service whose
// load balancer they ensured.
func checkPerController(ctx context.Context, t *testing.T, env *testbed.Env, poll func(string, func(context.Context) (bool, error))) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := env.Clientset.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("Service web's load balancer address", func(ctx context.Context) (bool, error) {
		s, err := env.Clientset.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].IP == profile.LoadBalancerIP, nil
	})
	for _, ev := range []struct{ ns, kind, name, reason, source string }{
		{metav1.NamespaceDefault, "Node", "worker", "Synced", "cloud-node-controller"},
		{svc.Namespace, "Service", svc.Name, "EnsuredLoadBalancer", "service-controller"},
	} {
		poll(fmt.Sprintf("a core %s event on %s %s", ev.reason, ev.kind, ev.name), func(ctx context.Context) (bool, error) {
			evs, err := env.Clientset.CoreV1().Events(ev.ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=" + ev.kind + ",involvedObject.name=" + ev.name + ",reason=" + ev.reason})
			return err == nil && slices.ContainsFunc(evs.Items, func(e corev1.Event) bool { return e.Source.Component == ev.source }), nil
		})
	}
	for _, sa := range []string{"node-controller", "service-controller"} {
		if _, err := env.Clientset.CoreV1().ServiceAccounts("kube-system").Get(ctx, sa, metav1.GetOptions{}); err != nil {
			t.Errorf("ServiceAccount kube-system/%s: %v (the daemon creates it for its controllers, as upstream's does)", sa, err)
		}
	}
}

// healthz GETs /healthz as the kubelet's prober does: HTTPS, no
// credentials, the serving certificate not verified.
func healthz(ctx context.Context, port int) int {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // as the kubelet's prober
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
