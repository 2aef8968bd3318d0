package serving

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The ConfigMap kube-apiserver publishes its client and request-header CAs
// in, and the keys upstream's delegated authentication reads.
const (
	authConfigMapNamespace = "kube-system"
	authConfigMapName      = "extension-apiserver-authentication"
	clientCAKey            = "client-ca-file"
	requestHeaderCAKey     = "requestheader-client-ca-file"
)

// authLookupTimeout bounds the one read of the ConfigMap at start.
const authLookupTimeout = 10 * time.Second

// withoutMissingRequestHeaderCA adapts authn to a cluster whose API server
// has no request-header (front-proxy) CA. Upstream's delegated
// authentication then runs a CA controller for the missing key anyway,
// which reports "missing content for CA bundle" every few seconds for the
// life of the process, on every replica. When the ConfigMap lacks the key,
// the in-cluster lookup is turned off and the client CA, when published,
// is read from the same ConfigMap as the lookup would have read it (and
// kept current the same way), so client certificates still authenticate;
// front-proxy authentication is off, which is said once. Anything the
// check cannot read leaves authn as it is: upstream's behaviour.
func withoutMissingRequestHeaderCA(ctx context.Context, authn apiserveroptions.DelegatingAuthenticationOptions) apiserveroptions.DelegatingAuthenticationOptions {
	log := klog.FromContext(ctx)
	if authn.SkipInClusterLookup || authn.RequestHeader.ClientCAFile != "" {
		return authn
	}
	cs, err := delegatedClient(authn.RemoteKubeConfigFile)
	if err != nil {
		log.V(2).Info("Cannot check the cluster's request-header CA; using upstream's lookup", "err", err)
		return authn
	}
	ctx, cancel := context.WithTimeout(ctx, authLookupTimeout)
	defer cancel()
	cm, err := cs.CoreV1().ConfigMaps(authConfigMapNamespace).Get(ctx, authConfigMapName, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		// Some vendors' published RBAC (DigitalOcean's) grants no read of
		// the ConfigMap; upstream's lookup would then stop the daemon.
		// Bearer tokens need none of it, so start without the client and
		// front-proxy CAs, and say what is missing.
		log.Info("Cannot read the cluster's client and request-header CAs: client-certificate and front-proxy authentication are off, bearer tokens still authenticate; grant the extension-apiserver-authentication-reader Role to turn them on",
			"configMap", klog.KRef(authConfigMapNamespace, authConfigMapName), "err", err.Error())
		authn.SkipInClusterLookup = true
		return authn
	}
	if err != nil || cm.Data[requestHeaderCAKey] != "" {
		return authn
	}
	clientCA, err := clientCAProvider(authn, cm, cs)
	if err != nil {
		log.V(2).Info("Cannot watch the cluster's client CA; using upstream's lookup", "err", err)
		return authn
	}
	authn.SkipInClusterLookup = true
	if clientCA != nil {
		authn.ClientCert.CAContentProvider = clientCA
	}
	log.Info("The cluster publishes no request-header CA: front-proxy authentication is off until a restart",
		"configMap", klog.KRef(authConfigMapNamespace, authConfigMapName), "key", requestHeaderCAKey,
		"clientCertificates", clientCA != nil || authn.ClientCert.ClientCA != "")
	return authn
}

// clientCAProvider is the client CA the in-cluster lookup would use: none
// when --client-ca-file is set (it wins anyway) or the ConfigMap has none.
func clientCAProvider(authn apiserveroptions.DelegatingAuthenticationOptions, cm *corev1.ConfigMap, cs kubernetes.Interface) (dynamiccertificates.CAContentProvider, error) {
	if authn.ClientCert.ClientCA != "" || authn.ClientCert.CAContentProvider != nil || cm.Data[clientCAKey] == "" {
		return nil, nil
	}
	p, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", authConfigMapNamespace, authConfigMapName, clientCAKey, cs)
	if err != nil {
		return nil, fmt.Errorf("client CA from configmap %s/%s: %w", authConfigMapNamespace, authConfigMapName, err)
	}
	return p, nil
}
