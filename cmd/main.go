/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// The tether operator: flags and manager wiring only.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/controller"
	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/internal/tracing"
	"github.com/tether-dev/tether/internal/version"
)

var scheme = runtime.NewScheme()

func init() {
	// Only the kinds the operator's own client reads and writes: Secrets
	// and ConfigMaps (credentials, card keys), Leases (shards) and its own.
	// client-go's typed clients (Events, tokens, leader election) keep the
	// full scheme of their own; a second copy here would only cost memory.
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(coordinationv1.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
}

type flags struct {
	metricsAddr, probeAddr     string
	metricsCertDir             string
	secureMetrics, enableHTTP2 bool
	leaderElect                bool
	leaderElectionNamespace    string
	watchNamespaces            string
	concurrency                int
	qps                        float64
	burst                      int
	cancelTimeout, sendTimeout time.Duration
	maxDepth                   int
	denyCIDRs, allowCIDRs      string
	denyOwnAddresses           bool
	maxResponseBytes           int64
	maxAnswerBytes             int64
	cardReadsPerNamespace      int
	resultTextLimit            int
	pushListen, pushURL        string
	pushKeyFile                string
	maxCallsPerAgent           int
	maxCallTimeout             time.Duration
	agentConcurrency           int
	pprofAddr                  string
	saNamespace, saName        string
	shards                     shard.Flags
}

func parseFlags() (flags, zap.Options) {
	var f flags
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint (:8443 for HTTPS, :8080 for HTTP, 0 disables it).")
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	flag.BoolVar(&f.enableHTTP2, "enable-http2", false, "Enable HTTP/2 for the metrics server.")
	flag.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"Folder holding tls.crt and tls.key for the metrics server (default: a self-signed certificate per start).")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz.")
	flag.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles.")
	flag.StringVar(&f.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's).")
	flag.StringVar(&f.watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces to watch (default: all).")
	flag.IntVar(&f.concurrency, "max-concurrent-reconciles", 4, "Delegations reconciled at once.")
	flag.Float64Var(&f.qps, "kube-api-qps", 200, "Queries per second to the API server.")
	flag.IntVar(&f.burst, "kube-api-burst", 300, "Burst of queries to the API server.")
	flag.DurationVar(&f.cancelTimeout, "cancel-timeout", 2*time.Minute, "How long CancelTask is retried before a finalizer lets go.")
	flag.DurationVar(&f.sendTimeout, "send-timeout", 2*time.Minute,
		"Deprecated and ignored: a send without a task id is looked up and made again by evidence until the Delegation's deadline.")
	flag.IntVar(&f.maxDepth, "max-depth", 16, "Maximum depth of a parentRef chain.")
	flag.StringVar(&f.denyCIDRs, "agent-deny-cidrs", "", "Comma-separated CIDRs agent addresses may not resolve to, "+
		"in addition to the built-in list, which is always denied: "+strings.Join(a2a.BuiltinDenyCIDRs(), ","))
	flag.BoolVar(&f.denyOwnAddresses, "agent-deny-own-addresses", true,
		"Deny agent addresses that are the operator's own: its pod's IPs (POD_IPS), its node's kubelet ports (NODE_IP) "+
			"and the API server it talks to.")
	flag.StringVar(&f.allowCIDRs, "agent-allow-cidrs", "",
		"Comma-separated CIDRs that are the only addresses agents may resolve to (default: any address not denied).")
	flag.Int64Var(&f.maxResponseBytes, "max-response-bytes", a2a.DefaultMaxResponseBytes, "Size bound of one response from an agent.")
	flag.Int64Var(&f.maxAnswerBytes, "max-answer-bytes", agentio.DefaultAnswerBytes,
		"Bound on the bytes agents' answers and streams hold at once: three quarters for calls "+
			"(at most 3/4 max-answer-bytes / max-response-bytes run at once, the rest wait: reason AgentBusy), "+
			"a quarter for streams (256 KiB each; tasks beyond are polled). The default suits the chart's 256Mi memory limit; 0 sets no bound.")
	flag.IntVar(&f.cardReadsPerNamespace, "card-reads-per-namespace", 0,
		"Card reads the Agents of one namespace may run at once, so one namespace's unanswering agents cannot hold every call in flight "+
			"(0: a quarter of the card reads' places, themselves a quarter of the calls --max-answer-bytes lets run; at least 1).")
	flag.IntVar(&f.resultTextLimit, "result-text-limit", 16<<10, "Bytes of result text kept in status.")
	flag.StringVar(&f.pushListen, "push-listen", "", "Address of the push notification receiver (e.g. :8082); empty disables push.")
	flag.StringVar(&f.pushURL, "push-url", "",
		"URL agents post notifications to, reaching --push-listen (e.g. http://tether-push.tether-system.svc:8082).")
	flag.StringVar(&f.pushKeyFile, "push-key-file", "", "File holding the key that signs notification tokens (default: a random key per start).")
	flag.IntVar(&f.maxCallsPerAgent, "max-calls-per-agent", 64,
		"Cap on A2A calls in flight to one Agent at once, whatever its spec.maxConcurrentCalls (default 8) asks.")
	flag.DurationVar(&f.maxCallTimeout, "max-call-timeout", agentio.DefaultMaxCallTimeout,
		"Cap on every A2A call's deadline, whatever the Agent's spec.requestTimeout asks.")
	flag.IntVar(&f.agentConcurrency, "agent-concurrent-reconciles", 4, "Agents (card reads) reconciled at once.")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "", "Address of the Go profiler's HTTP endpoints (e.g. 127.0.0.1:6060); empty disables them.")
	flag.StringVar(&f.saNamespace, "service-account-namespace", os.Getenv("POD_NAMESPACE"),
		"Namespace of the operator's own ServiceAccount, whose tokens go to Agents with spec.auth.serviceAccountToken (default $POD_NAMESPACE).")
	flag.StringVar(&f.saName, "service-account-name", os.Getenv("SERVICE_ACCOUNT_NAME"),
		"The operator's own ServiceAccount (default $SERVICE_ACCOUNT_NAME; the chart sets both from the pod).")
	f.shards.Bind(flag.CommandLine)
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	return f, opts
}

func parseCIDRs(flagName, s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flagName, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	printVersion := flag.Bool("version", false, "Print the version, commit and build date, and exit.")
	f, zapOpts := parseFlags()
	build := version.Get()
	if *printVersion {
		fmt.Println("tether-operator", build)
		return
	}
	logger := zap.New(zap.UseFlagOptions(&zapOpts))
	if s, err := f.shards.Resolve(); err == nil && s.Count > 1 {
		logger = logger.WithValues("shard", s.String()) // every line says which shard wrote it
	}
	ctrl.SetLogger(logger)
	log := ctrl.Log.WithName("setup")
	log.Info("tether operator", "version", build.Version, "commit", build.Commit, "date", build.Date, "go", build.GoVersion)
	metrics.Registry.MustRegister(version.BuildInfo())
	if err := run(f); err != nil {
		log.Error(err, "operator stopped")
		os.Exit(1)
	}
}

func run(f flags) error {
	deny, err := parseCIDRs("agent-deny-cidrs", f.denyCIDRs)
	if err != nil {
		return err
	}
	allow, err := parseCIDRs("agent-allow-cidrs", f.allowCIDRs)
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst

	metricsOpts := metricsserver.Options{BindAddress: f.metricsAddr, SecureServing: f.secureMetrics,
		// OpenMetrics to scrapers that ask for it: the only format that
		// carries the call histogram's exemplars (trace ids).
		HandlerOpts: []func(*promhttp.HandlerOpts){func(o *promhttp.HandlerOpts) { o.EnableOpenMetrics = true }}}
	if !f.enableHTTP2 {
		// HTTP/2 stream cancellation and rapid reset CVEs: HTTP/1.1 only.
		metricsOpts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	if f.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if f.metricsCertDir != "" {
		metricsOpts.CertDir, metricsOpts.CertName, metricsOpts.KeyName = f.metricsCertDir, "tls.crt", "tls.key"
	}
	var watched []string
	for ns := range strings.SplitSeq(f.watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			watched = append(watched, ns)
		}
	}
	ctx := ctrl.SetupSignalHandler()
	// With --watch-namespaces the operator may list only there.
	probeNamespace, _, _ := strings.Cut(f.watchNamespaces, ",")
	shards, err := shard.New(ctx, cfg, scheme, f.shards, strings.TrimSpace(probeNamespace))
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info(shards.Describe(), "filtering", string(shards.Filtering))
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        f.probeAddr,
		PprofBindAddress:              f.pprofAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "tether-operator.delegation.tether.dev",
		LeaderElectionNamespace:       f.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controller.CacheOptions(watched...),
	}
	if err := shards.Configure(&opts); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	var own []a2a.DeniedAddress
	if f.denyOwnAddresses {
		if own, err = ownAddresses(cfg.Host); err != nil {
			return fmt.Errorf("--agent-deny-own-addresses: %w", err)
		}
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	connector := &agentio.Connector{
		SecretReader: mgr.GetAPIReader(), DenyCIDRs: deny, AllowCIDRs: allow, OwnAddresses: own,
		MaxResponseBytes: f.maxResponseBytes,
		Tokens:           &agentio.ServiceAccountTokens{ServiceAccounts: core, Namespace: f.saNamespace, Name: f.saName},
	}
	recorder := mgr.GetEventRecorder("tether")
	// One set of per-Agent pools for every call: card reads included.
	calls := agentio.NewDispatcher(f.maxCallsPerAgent, f.maxCallTimeout)
	calls.SetMemoryLimit(f.maxAnswerBytes, f.maxResponseBytes)
	calls.CardReadsPerNamespace = f.cardReadsPerNamespace
	// A call that starts or ends work at an agent leaves only while this
	// process holds its shard's Lease; the Dispatcher stops with the
	// controllers and waits for the calls on their way (up to
	// agentio.DefaultDrainTimeout) before the Lease is given back.
	calls.Fence = shards
	if err := mgr.Add(calls); err != nil {
		return err
	}
	agents := &controller.AgentReconciler{Client: mgr.GetClient(), Connector: connector, Calls: calls, Recorder: recorder,
		MaxConcurrentReconciles: f.agentConcurrency, MaxCallTimeout: f.maxCallTimeout}
	if err := agents.SetupWithManager(mgr); err != nil {
		return err
	}
	// Only Agents with spec.conformance.check reach it.
	if err := (&controller.AgentConformanceReconciler{Client: mgr.GetClient(), Connector: connector}).SetupWithManager(mgr); err != nil {
		return err
	}
	push, err := pushReceiver(f, mgr)
	if err != nil {
		return err
	}
	if push != nil && f.leaderElect {
		// A notification that reaches a standby is handed to the leader.
		push.Leader, shards.PushEndpoint = shards, push.Endpoint
	}
	if err := (&controller.DelegationReconciler{
		Push:   push,
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Connector: connector, Recorder: recorder,
		Calls: calls,
		Options: controller.Options{
			CancelTimeout: f.cancelTimeout, SendTimeout: f.sendTimeout, MaxDepth: f.maxDepth,
			ResultTextLimit: f.resultTextLimit, MaxConcurrentReconciles: f.concurrency,
			MinHandOverTTL: minHandOverTTL(f),
		},
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if f.leaderElect {
		if err := shards.Start(ctx, mgr, f.leaderElectionNamespace); err != nil {
			return err
		}
	}
	// Traces only when the OTEL_* environment asks for them (docs/operations.md#tracing).
	stopTracing, err := tracing.Setup(ctx, "tether-operator")
	if err != nil {
		return err
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(flush)
	}()
	ctrl.Log.WithName("setup").Info("starting the operator", "watchNamespaces", f.watchNamespaces, "tracing", tracing.On())
	return mgr.Start(ctx)
}

// minHandOverTTL is the shortest lease.ttl that survives a leader
// hand-over; without leader election there is none to survive.
func minHandOverTTL(f flags) time.Duration {
	if !f.leaderElect {
		return 0
	}
	return f.shards.MinTTL()
}

func pushReceiver(f flags, mgr ctrl.Manager) (*controller.PushReceiver, error) {
	if f.pushListen == "" {
		return nil, nil
	}
	if f.pushURL == "" {
		return nil, fmt.Errorf("--push-url is required with --push-listen: agents need a URL that reaches the receiver")
	}
	var key []byte
	if f.pushKeyFile != "" {
		var err error
		if key, err = os.ReadFile(f.pushKeyFile); err != nil {
			return nil, fmt.Errorf("--push-key-file: %w", err)
		}
		// An empty file would otherwise mean "a random key per start".
		if len(key) < controller.MinPushKeyBytes {
			return nil, fmt.Errorf("--push-key-file: the key has %d bytes, at least %d are needed (for example: head -c 32 /dev/urandom)",
				len(key), controller.MinPushKeyBytes)
		}
	}
	return controller.NewPushReceiver(f.pushListen, f.pushURL, key, mgr.GetClient())
}

// ownAddresses reads where the operator runs: the pod's and node's IPs from
// the downward API (the chart sets POD_IPS and NODE_IP) and the API server
// from the client's configuration and the in-cluster Service variables.
func ownAddresses(apiServer string) ([]a2a.DeniedAddress, error) {
	s := a2a.Surroundings{PodIPs: strings.Split(os.Getenv("POD_IPS"), ","), NodeIP: os.Getenv("NODE_IP"),
		APIServers: []string{apiServer}}
	if h, p := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"); h != "" && p != "" {
		s.APIServers = append(s.APIServers, net.JoinHostPort(h, p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	own, err := a2a.OwnAddresses(ctx, s, net.DefaultResolver.LookupHost)
	if err == nil {
		ctrl.Log.WithName("setup").Info("denying the operator's own addresses to agents", "count", len(own))
	}
	return own, err
}
