package leader

import (
	"context"
	"errors"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/app/options"
)

// ErrMigrationLeaseLost ends the process, as upstream's
// "migration leaderelection lost" does: the controllers it guarded may
// already run elsewhere.
var ErrMigrationLeaseLost = errors.New("leader migration: lost the migration lease")

// RunMigrationLease campaigns for the migration lease, as upstream does
// only once the main lease is held, and calls start when it wins. It
// blocks until ctx ends (nil) or the lease is lost (an error). The lease is
// released on a clean shutdown so the other component takes over at once.
func RunMigrationLease(ctx context.Context, restCfg *rest.Config, o *options.Options, plan *options.MigrationPlan, start func(context.Context) error) error {
	log := klog.FromContext(ctx).WithValues("lease", o.LeaderElectNamespace+"/"+plan.LeaseName)
	id, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader migration: identity: %w", err)
	}
	id += "_" + string(uuid.NewUUID())
	cfg := rest.CopyConfig(restCfg)
	cfg.UserAgent = options.UserAgent + "/leader-migration"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("leader migration: client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElectNamespace, Name: plan.LeaseName},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	var (
		startErr = make(chan error, 1)
		lost     = false
	)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            plan.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("Leader migration: acquired the migration lease, starting migrated controllers", "identity", id)
				if err := start(ctx); err != nil {
					startErr <- err
					cancel()
				}
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					lost = true
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader migration: %w", err)
	}
	log.Info("Leader migration: campaigning for the migration lease", "identity", id)
	le.Run(runCtx)
	select {
	case err := <-startErr:
		return err
	default:
	}
	if lost {
		return ErrMigrationLeaseLost
	}
	return nil
}
