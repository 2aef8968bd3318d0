package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratus-ccm/stratus/internal/explain"
)

// PluginBinaryName is the name under which kubectl runs the binary as a
// plugin: `kubectl stratus explain ...` execs `kubectl-stratus explain ...`.
const PluginBinaryName = "kubectl-stratus"

// DefaultExplainServer is the controller manager's secure port on this
// machine: upstream's default --secure-port.
const DefaultExplainServer = "https://127.0.0.1:10258"

// ccmURLEnv names the controller manager's secure port when --server is not
// given. The sandbox's env file exports it, with the port the sandbox
// picked, so that explain finds a sandbox on ports other than upstream's.
const ccmURLEnv = "STRATUS_CCM_URL"

// explainServer is the URL explain asks: --server when given, else
// $STRATUS_CCM_URL when set, else DefaultExplainServer.
func explainServer(flag, env string) string {
	switch {
	case flag != "":
		return flag
	case env != "":
		return env
	default:
		return DefaultExplainServer
	}
}

type explainOptions struct {
	server     string
	kubeconfig string
	context    string
	token      string
	caFile     string
	insecure   bool
	output     string
	timeout    time.Duration
}

func newExplainCommand() *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain (service NAMESPACE/NAME | node NAME)",
		Short: "Say why a Service or a Node is as it is, from the controller manager that leads",
		Long: `Ask a Stratus controller manager what its controllers did with one object:
which controller acts on it, its last sync and result, the last error and the
failed attempts in a row, the next retry and why, the cloud calls made for it
with their results and latencies, for a Service the nodes its load balancer
targets, for a Node the load balancers that include it and what excludes it.

It reads /debug/explain on the controller manager's secure port, with the
credentials of your kubeconfig (a client certificate or a token), which the
controller manager checks with the API server as it does for /metrics: the
user needs "get" on the non-resource URL /debug/explain (the chart's
ClusterRole <release>:explain-reader grants it). A standby answers with the
replica that leads. Installed as kubectl-stratus on the PATH, it is also
"kubectl stratus explain".

Without --server it asks $STRATUS_CCM_URL when that is set (the sandbox's env
file exports it), else ` + DefaultExplainServer + `.`,
		Example: `  stratus explain service default/web --server https://10.0.0.5:10258 --certificate-authority ca.crt
  kubectl stratus explain node worker-3 --insecure-skip-tls-verify`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := explain.ParseRef(args[0], args[1])
			if err != nil {
				return err
			}
			o.server = explainServer(o.server, os.Getenv(ccmURLEnv))
			return o.run(cmd.Context(), cmd.OutOrStdout(), ref)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "URL of the controller manager's secure port (default: $"+ccmURLEnv+" when set, else "+DefaultExplainServer+")")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig whose user's credentials are sent (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context to take the credentials of")
	f.StringVar(&o.token, "token", "", "bearer token to send instead of the kubeconfig's credentials")
	f.StringVar(&o.caFile, "certificate-authority", "", "CA bundle that signed the controller manager's serving certificate")
	f.BoolVar(&o.insecure, "insecure-skip-tls-verify", false, "do not verify the controller manager's serving certificate (it is self-signed unless --tls-cert-file is set)")
	f.StringVarP(&o.output, "output", "o", "", "Output format: '' (text) or json")
	f.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "how long to wait for the answer")
	return cmd
}

// restConfig is the kubeconfig user's credentials (or --token), pointed at
// the controller manager: the API server's address and CA are not its.
func (o *explainOptions) restConfig() (*rest.Config, error) {
	cfg := &rest.Config{Host: o.server, Timeout: o.timeout, BearerToken: o.token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: o.caFile, Insecure: o.insecure}}
	if o.token != "" {
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	user, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("credentials from the kubeconfig: %w (or pass --token)", err)
	}
	cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData = user.CertFile, user.KeyFile, user.CertData, user.KeyData
	cfg.BearerToken, cfg.BearerTokenFile = user.BearerToken, user.BearerTokenFile
	cfg.ExecProvider, cfg.AuthProvider = user.ExecProvider, user.AuthProvider
	return cfg, nil
}

func (o *explainOptions) run(ctx context.Context, w io.Writer, ref explain.Ref) error {
	if o.output != "" && o.output != "json" {
		return fmt.Errorf("--output=%s: must be empty or json", o.output)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", o.server, err)
	}
	name := ref.Name
	if ref.Namespace != "" {
		name = ref.Namespace + "/" + ref.Name
	}
	u := strings.TrimSuffix(o.server, "/") + explain.Path + "?" + url.Values{"kind": {ref.Kind}, "name": {name}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", u, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("ask %s: %w", o.server, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", o.server, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: 401 Unauthorized: the controller manager could not authenticate these credentials", o.server)
	case http.StatusForbidden:
		return fmt.Errorf("%s: 403 Forbidden: the user may not get %s (grant the ClusterRole <release>:explain-reader): %s",
			o.server, explain.Path, strings.TrimSpace(string(body)))
	default:
		return fmt.Errorf("%s: %s: %s", o.server, resp.Status, strings.TrimSpace(string(body)))
	}
	if o.output == "json" {
		_, err := w.Write(body)
		return err
	}
	var ex explain.Explanation
	if err := json.Unmarshal(body, &ex); err != nil {
		return fmt.Errorf("the answer of %s is not an explanation: %w", o.server, err)
	}
	return printExplanation(w, &ex, time.Now())
}

// errNotLeader is returned when a standby answered: it knows nothing the
// leader's controllers did.
var errNotLeader = errors.New("the replica asked does not lead")
