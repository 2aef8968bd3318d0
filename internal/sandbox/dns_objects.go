package sandbox

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func dnsLabels() map[string]string { return map[string]string{"k8s-app": DNSService} }

// dnsDeployment is one CoreDNS replica on a real node, in the node's
// network namespace (see startClusterDNS), with the probes kubeadm's
// CoreDNS has. One replica: the sandbox and the e2e specs stop no node
// that the DNS pod would have to outlive, and each pod costs startup.
// The old pod goes before the new one is made (maxSurge 0), since both
// would want port 53 of a node and a one-node sandbox has no other; but
// unlike Recreate the rollout does not wait for the old pod to be gone,
// which on a node whose kubelet is stopped is never.
func dnsDeployment(digest string) *appsv1.Deployment {
	replicas := int32(1)
	noSurge, oneDown := intstr.FromInt32(0), intstr.FromInt32(1)
	probe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt(port)}}, PeriodSeconds: 2, FailureThreshold: 5}
	}
	port := func(name string, proto corev1.Protocol) corev1.ContainerPort {
		return corev1.ContainerPort{Name: name, ContainerPort: 53, Protocol: proto}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: DNSService, Namespace: metav1.NamespaceSystem, Labels: dnsLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &noSurge, MaxUnavailable: &oneDown}},
			Selector: &metav1.LabelSelector{MatchLabels: dnsLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: dnsLabels(),
					Annotations: map[string]string{"sandbox.stratus.dev/config-digest": digest}},
				Spec: corev1.PodSpec{
					NodeSelector:      map[string]string{RealNodeLabel: "true"},
					HostNetwork:       true,
					DNSPolicy:         corev1.DNSDefault,
					PriorityClassName: "system-cluster-critical",
					Tolerations:       []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name: "coredns", Image: dnsImage, ImagePullPolicy: corev1.PullNever,
						Args:           []string{"-conf", "/etc/coredns/Corefile"},
						Ports:          []corev1.ContainerPort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
						LivenessProbe:  probe("/health", dnsHealthPort),
						ReadinessProbe: probe("/ready", dnsReadyPort),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/coredns", ReadOnly: true},
							{Name: "kubeconfig", MountPath: "/var/run/coredns", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: DNSService}}}},
						{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: DNSService}}},
					},
				},
			},
		},
	}
}

// dnsServiceObject is kube-dns at the address the kubelets give pods.
func dnsServiceObject() *corev1.Service {
	port := func(name string, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: 53, Protocol: proto, TargetPort: intstr.FromInt32(53)}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DNSService, Namespace: metav1.NamespaceSystem, Labels: dnsLabels()},
		Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNSAddr().String(),
			Selector:  dnsLabels(),
			Ports:     []corev1.ServicePort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
		},
	}
}
