package faults

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stratus-ccm/stratus/pkg/localcloud/api"
	lcclient "github.com/stratus-ccm/stratus/pkg/localcloud/client"
	"github.com/stratus-ccm/stratus/pkg/localcluster"
)

// pausedLeader: the leader is frozen (SIGSTOP) past its lease while a
// standby waits, and kube-apiserver restarts meanwhile, so that the old
// leader's watches are gone when it resumes and its cache stays as it was
// before the pause until it has watched again. The standby takes over;
// three Services are deleted (their load balancers with them) and another
// created. Then the old leader resumes (SIGCONT) believing what it knew
// before the pause: its drift pass, overdue, finds the deleted Services'
// load balancers missing, and the new one's looks orphaned. It must make
// no cloud mutation after it resumes: no load balancer is created (the
// leak of a paused leader recreating a deleted Service's), the new
// Service's is not replaced, and none is set by the old process. It gives
// up leadership, and its supervisor restarts it as a standby; it is then
// stopped for good, so that one replica leads the later scenarios, as
// after the failover.
func pausedLeader(t *testing.T, w *world, leader *replica) *replica {
	ns := w.namespace("paused")
	names := w.createServices(ns, "paused", 3)
	standby := w.startReplica("c")
	waitFor(w.ctx, t, "the paused Services to converge and the standby to be ready", convergeTimeout, func(ctx context.Context) (bool, string) {
		if ok, why := w.converged(ctx); !ok {
			return false, why
		}
		return standby.ready(ctx)
	})
	holder := w.leaseHolder(t)
	pid, exited, log := leader.process()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	if err := w.plane.Kill(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	if err := w.plane.Restart(w.ctx, localcluster.APIServer); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	waitFor(w.ctx, t, "the standby to take the lease", convergeTimeout, func(ctx context.Context) (bool, string) {
		l, err := w.cs.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != holder && h != "", "held by " + h
	})
	w.deleteServices(ns, names...)
	during := w.createServices(ns, "during", 1)[0]
	waitFor(w.ctx, t, "the new leader to converge while the old one is paused", convergeTimeout, w.converged)
	// The old leader's orphan collector, were it to act, would find the
	// new load balancer older than its grace period.
	var kept string
	waitFor(w.ctx, t, "the new load balancer to be older than the orphan grace period", convergeTimeout, func(ctx context.Context) (bool, string) {
		lbs, err := w.lbsOf(ctx, ns)
		if err != nil {
			return false, err.Error()
		}
		kept = lbs[during].ID
		return time.Since(lbs[during].CreatedAt) > orphanGrace, "created at " + lbs[during].CreatedAt.String()
	})
	before := w.createdLBs(t)

	resumedAt := time.Now()
	resume()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("the old leader (pid %d) still runs a minute after it resumed without its lease", pid)
	}
	w.settle(t, "leader-paused-standby", resumedAt)
	created := w.createdLBs(t) - before
	if created != 0 {
		t.Errorf("the cloud created %d load balancers after the old leader resumed; want none", created)
	}
	lbs, err := w.lbsOf(w.ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if lbs[during].ID != kept {
		t.Errorf("the load balancer of %s, created while the old leader was paused, was replaced: %s, now %s", during, kept, lbs[during].ID)
	}
	set := w.setBy(t, pid, resumedAt)
	if len(set) > 0 {
		t.Errorf("the old leader (pid %d) set load balancers after it resumed: %v", pid, set)
	}
	refused := logMentions(t, log, "Refusing to act and giving up leadership")
	leader.kill(false)
	t.Logf("fault-safety scenario=leader-paused-standby created-after-resume=%d set-by-old-leader=%d old-leader-gave-up=%d",
		created, len(set), refused)
	return standby
}

// process is the running process' id, the channel closed when it exits
// and its log file.
func (r *replica) process() (int, <-chan struct{}, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd.Process.Pid, r.exited, r.log
}

// setBy lists the cluster's load balancers whose spec the process pid
// (named in localcloud's provider User-Agent) set after since.
func (w *world) setBy(t *testing.T, pid int, since time.Time) []string {
	t.Helper()
	all, err := w.cloud.ListAllLoadBalancers(w.ctx, lcclient.ListOptions{Cluster: clusterName})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, lb := range all {
		if strings.Contains(lb.UpdatedBy, fmt.Sprintf("pid %d)", pid)) && lb.UpdatedAt.After(since) {
			out = append(out, lb.Name+" "+lb.Tags[api.TagServiceNamespace]+"/"+lb.Tags[api.TagServiceName])
		}
	}
	return out
}

// logMentions counts the lines of the log file that contain s.
func logMentions(t *testing.T, log, s string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), s)
}
