package service_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/stratus-ccm/stratus/internal/controllers/service"
	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
)

// waitCondition waits until the Service's condition typ has status and
// reason and its message contains each of msgs; it returns the Service.
func (b *bed) waitCondition(ns, name, typ string, status metav1.ConditionStatus, reason string, msgs ...string) *corev1.Service {
	b.t.Helper()
	var svc *corev1.Service
	last := "no Service read"
	b.poll(typ+"="+string(status)+"/"+reason+" on "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		var err error
		if svc, err = b.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, nil // a failed read is polled again
		}
		c := meta.FindStatusCondition(svc.Status.Conditions, typ)
		if c == nil {
			last = "no condition in " + conditionsString(svc)
			return false, nil
		}
		last = conditionsString(svc)
		if c.Status != status || c.Reason != reason {
			return false, nil
		}
		for _, m := range msgs {
			if !strings.Contains(c.Message, m) {
				return false, nil
			}
		}
		return true, nil
	}, &last)
	return svc
}

func conditionsString(svc *corev1.Service) string {
	var b strings.Builder
	for _, c := range svc.Status.Conditions {
		b.WriteString(c.Type + "=" + string(c.Status) + "/" + c.Reason + " " + c.Message + "; ")
	}
	return b.String()
}

// TestConditionsAgainstAPIServer: a Service blocked by the cloud's load
// balancer quota shows LoadBalancerServing=False with the quota's message
// and the retry time, and turns True once the quota is raised, without a
// restart; another writer's condition is kept, and the controller's own
// are written under its field manager. A provider refusal that quotes a
// 10 KB annotation value still leaves a reason on the Service: the event is
// accepted by the API server and the condition is set.
func TestConditionsAgainstAPIServer(t *testing.T) {
	b := newBed(t)
	b.addNode("node-a", nil)
	b.start()
	ctx := b.ctx
	cs := b.cs

	b.run("quota", func(t *testing.T) {
		if _, err := b.cloud.Client.UpdateConfig(ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptrTo(0)}}); err != nil {
			t.Fatal(err)
		}
		svc := b.createService(webService("default", "quota"))
		// Another writer's condition, applied under its own field manager.
		other := corev1ac.Service("quota", "default").WithStatus(corev1ac.ServiceStatus().WithConditions(
			metav1ac.Condition().WithType("example.com/Reviewed").WithStatus(metav1.ConditionTrue).
				WithReason("Reviewed").WithMessage("kept").WithLastTransitionTime(metav1.Now())))
		if _, err := cs.CoreV1().Services("default").ApplyStatus(ctx, other, metav1.ApplyOptions{FieldManager: "reviewer", Force: true}); err != nil {
			t.Fatal(err)
		}
		got := b.waitCondition("default", "quota", service.ConditionServing, metav1.ConditionFalse, service.ReasonQuotaExceeded,
			"quota loadBalancers exceeded (limit 0)", "next retry at")
		if c := meta.FindStatusCondition(got.Status.Conditions, service.ConditionProvisioning); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("LoadBalancerProvisioning %+v, want True while the quota blocks", c)
		}
		if !hasEventNote(ctx, cs, svc, service.ReasonSyncLoadBalancerFailed, "quota loadBalancers exceeded") {
			t.Error("no SyncLoadBalancerFailed event with the quota's message")
		}

		if _, err := b.cloud.Client.UpdateConfig(ctx, api.KnobsPatch{Quotas: &api.QuotasPatch{LoadBalancers: ptrTo(10)}}); err != nil {
			t.Fatal(err)
		}
		ip := b.waitIngress("default", "quota")
		got = b.waitCondition("default", "quota", service.ConditionServing, metav1.ConditionTrue, service.ReasonEnsuredLoadBalancer, ip)
		b.waitCondition("default", "quota", service.ConditionProvisioning, metav1.ConditionFalse, service.ReasonProvisioned)
		if c := meta.FindStatusCondition(got.Status.Conditions, "example.com/Reviewed"); c == nil || c.Message != "kept" {
			t.Errorf("another writer's condition became %+v", c)
		}
		owned := false
		for _, mf := range got.ManagedFields {
			if mf.Manager == service.ControllerName && mf.Subresource == "status" && mf.FieldsV1 != nil &&
				strings.Contains(mf.FieldsV1.GetRawString(), `k:{\"type\":\"`+service.ConditionServing+`\"}`) {
				owned = true
			}
			if mf.Manager == "reviewer" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), service.ConditionServing) {
				t.Errorf("the other writer owns the controller's condition: %s", mf.FieldsV1.GetRawString())
			}
		}
		if !owned {
			t.Errorf("no status managedFields entry of %s owns %s: %+v", service.ControllerName, service.ConditionServing, got.ManagedFields)
		}
	})

	b.run("long refused annotation", func(t *testing.T) {
		long := strings.Repeat("9", 10*1024)
		svc := webService("default", "long")
		svc.Annotations["localcloud.stratus.io/health-check-interval"] = long
		svc = b.createService(svc)
		b.waitCondition("default", "long", service.ConditionServing, metav1.ConditionFalse, service.ReasonSyncLoadBalancerFailed,
			"health-check-interval", "(10242 bytes)")
		b.poll("a SyncLoadBalancerFailed event quoting the value by its length", func(ctx context.Context) (bool, error) {
			return hasEventNote(ctx, cs, svc, service.ReasonSyncLoadBalancerFailed, "health-check-interval: invalid value"), nil
		})
		if hasEventNote(ctx, cs, svc, service.ReasonSyncLoadBalancerFailed, long[:200]) {
			t.Error("an event repeats the long value")
		}
	})
}
