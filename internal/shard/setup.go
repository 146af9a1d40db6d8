/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Labels and annotations on a shard's Lease, read by `kubectl tether shards`.
const (
	LabelShard           = "delegation.tether.dev/shard"
	AnnotationShards     = "delegation.tether.dev/shards"
	AnnotationShardRange = "delegation.tether.dev/shard-range"
	// singleLeaseName is the Lease of an unsharded operator: the name it
	// always had, so a rolling upgrade keeps one leader.
	singleLeaseName = "tether-operator.delegation.tether.dev"
)

// LeaseName is the leader election Lease of the shard. It names the count
// as well: while a resharding rolls, shard i of the old count and shard i
// of the new one are different shards (see exclusiveLock).
func (s Shard) LeaseName() string {
	if s.Count == 1 {
		return singleLeaseName
	}
	return "tether-shard-" + strconv.Itoa(s.Index) + "-of-" + strconv.Itoa(s.Count)
}

var (
	infoGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tether_shard_info",
		Help: "The shard this process serves and where its objects are filtered " +
			"(server: the API server's sharded list and watch; client: before the cache); always 1.",
	}, []string{"shard", "shards", "filtering"})
	leaderGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tether_shard_leader",
		Help: "1 while this process leads its shard (holds the shard's Lease), 0 while it stands by.",
	}, []string{"shard"})
)

func init() { metrics.Registry.MustRegister(infoGauge, leaderGauge) }

// Setup is a resolved shard: which one, where its objects are filtered and
// how its leader is elected.
type Setup struct {
	Shard     Shard
	Filtering Filtering
	Flags     Flags
	kube      client.Client
	cfg       *rest.Config
	// PushEndpoint, when set, is where this process receives push
	// notifications; as leader it writes it on the shard's Lease.
	PushEndpoint func(ctx context.Context) (string, error)
	// identity is this process's name in the Lease; leaseNamespace holds it.
	identity       string
	leaseNamespace string
	isLeading      atomic.Bool
	pushLeader     pushLeader
	// lock is the shard's Lease lock once Configure set up an election.
	lock *exclusiveLock
}

// Holds reports whether calls to agents may leave now: without leader
// election always; with it, while this process leads and its Lease cannot
// have been taken by another (agentio.Fence).
func (s *Setup) Holds() bool {
	return s.lock == nil || s.lock.Holds()
}

// New resolves the shard and, with --shard-filtering=auto and more than
// one shard, probes whether the API server filters by shard selector (in
// probeNamespace, or cluster-wide when it is empty).
func New(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, f Flags, probeNamespace string) (*Setup, error) {
	s, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	out := &Setup{Shard: s, Filtering: Filtering(f.Filtering), Flags: f, kube: kube, cfg: cfg}
	switch {
	case s.Count == 1:
		out.Filtering = "none"
	case out.Filtering == "auto":
		if out.Filtering, err = Probe(ctx, kube, v1alpha1.GroupVersion.WithKind("Delegation"), probeNamespace); err != nil {
			return nil, err
		}
	}
	infoGauge.WithLabelValues(strconv.Itoa(s.Index), strconv.Itoa(s.Count), string(out.Filtering)).Set(1)
	leaderGauge.WithLabelValues(strconv.Itoa(s.Index)).Set(0)
	return out, nil
}

// Describe is the line the operator prints at start.
func (s *Setup) Describe() string {
	if s.Shard.Count == 1 {
		return "one shard: every namespace"
	}
	start, end := s.Shard.Range()
	how := "the API server filters (ShardedListAndWatch)"
	if s.Filtering == ClientSide {
		how = "the API server ignores shardSelector: filtered before the cache"
	}
	return fmt.Sprintf("shard %s owns the namespaces whose FNV-1a-64 hash is in [%s, %s); %s", s.Shard, start, end, how)
}

// Configure sets the manager's cache to hold only the shard's objects and
// its leader election to the shard's Lease and timings. The Lease is taken
// only while no shard of another count overlapping this one leads (see
// exclusiveLock); o.LeaderElectionNamespace must be set or the process run
// in a pod.
func (s *Setup) Configure(o *ctrl.Options) error {
	if s.Shard.Count > 1 {
		o.Cache.NewInformer = s.Shard.NewInformer(s.Filtering)
	}
	o.LeaderElectionID = s.Shard.LeaseName()
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &s.Flags.LeaseDuration, &s.Flags.RenewDeadline, &s.Flags.RetryPeriod
	if !o.LeaderElection {
		return nil
	}
	ns := o.LeaderElectionNamespace
	if ns == "" {
		if ns = inClusterNamespace(); ns == "" {
			return fmt.Errorf("not running in a pod: --leader-election-namespace is needed for the shard's Lease")
		}
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	// As controller-runtime's own lock: a request times out well before
	// the renew deadline, so one hung call cannot cost the leadership.
	cfg := rest.AddUserAgent(rest.CopyConfig(s.cfg), "leader-election")
	cfg.Timeout = max(s.Flags.RenewDeadline/2, time.Second)
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	s.identity, s.leaseNamespace = host+"_"+string(uuid.NewUUID()), ns
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: s.Shard.LeaseName()},
		Client:     coordination,
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.identity},
	}
	s.lock = &exclusiveLock{Interface: lock, shard: s.Shard, namespace: ns,
		name: s.Shard.LeaseName(), leases: s.kube, now: time.Now}
	o.LeaderElectionResourceLockInterface = s.lock
	return nil
}

// Start readies a manager built with Configure: the informers of the
// cached kinds start now, so a standby's cache is warm when it takes
// over; the shard's Lease carries the shard count and range; the leader
// gauge follows the election.
func (s *Setup) Start(ctx context.Context, mgr manager.Manager, leaseNamespace string) error {
	for _, obj := range []client.Object{&v1alpha1.Delegation{}, &v1alpha1.Agent{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	if leaseNamespace == "" {
		leaseNamespace = inClusterNamespace()
	}
	if leaseNamespace != "" {
		if err := s.labelLease(ctx, leaseNamespace); err != nil {
			return fmt.Errorf("labelling the shard's Lease %s/%s: %w", leaseNamespace, s.Shard.LeaseName(), err)
		}
	}
	return mgr.Add(leading(func(ctx context.Context) {
		s.isLeading.Store(true)
		leaderGauge.WithLabelValues(strconv.Itoa(s.Shard.Index)).Set(1)
		log := ctrl.LoggerFrom(ctx)
		log.Info("leading the shard", "lease", s.Shard.LeaseName())
		if s.PushEndpoint != nil {
			if err := s.advertisePush(ctx); err != nil {
				log.Error(err, "the standbys cannot hand push notifications over: this leader's receiver URL is not on the Lease")
			}
		}
	}))
}

// labelLease creates the shard's Lease, or updates its labels, before the
// election uses it: the elector keeps metadata it did not write.
func (s *Setup) labelLease(ctx context.Context, ns string) error {
	start, end := s.Shard.Range()
	labels := map[string]string{LabelShard: strconv.Itoa(s.Shard.Index)}
	annotations := map[string]string{AnnotationShards: strconv.Itoa(s.Shard.Count), AnnotationShardRange: "[" + start + ", " + end + ")"}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		err := s.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Shard.LeaseName()}, lease)
		if apierrors.IsNotFound(err) {
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.Shard.LeaseName(),
				Labels: labels, Annotations: annotations}}
			if err = s.kube.Create(ctx, lease); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(coordinationv1.Resource("leases"), lease.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if lease.Labels[LabelShard] == labels[LabelShard] && lease.Annotations[AnnotationShards] == annotations[AnnotationShards] &&
			lease.Annotations[AnnotationShardRange] == annotations[AnnotationShardRange] {
			return nil
		}
		lease.Labels = merge(lease.Labels, labels)
		lease.Annotations = merge(lease.Annotations, annotations)
		return s.kube.Update(ctx, lease)
	})
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	maps.Copy(into, from)
	return into
}

// inClusterNamespace is the pod's namespace, where controller-runtime puts
// the Lease when --leader-election-namespace is not set.
func inClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// leading runs fn once this process leads its shard.
type leading func(ctx context.Context)

func (l leading) Start(ctx context.Context) error {
	l(ctx)
	<-ctx.Done()
	return nil
}

func (leading) NeedLeaderElection() bool { return true }
