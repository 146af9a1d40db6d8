/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/test/cluster"
)

// The dispatch and throughput floors are measured by a plain client in a
// process of its own (this test binary run with floorClientEnv): inside the
// harness, the harness's own work (its informers, the agents, the
// operator's logs it reads) would slow the floor and flatter the ratio.

// floorClientEnv, when set to a floorJob in JSON, makes the test binary a
// plain client that runs the job, prints its floorResult and exits.
const floorClientEnv = "BENCH_FLOOR_CLIENT"

// floorResultPrefix starts the line the floor client prints its result on.
const floorResultPrefix = "floor result: "

type floorJob struct {
	Kubeconfig string `json:"kubeconfig"`
	Namespace  string `json:"namespace"`
	// Kind is "dispatch" (N creates at Rate per second, each timed to its
	// add event at the client's own informer) or "throughput" (N creates,
	// each followed by one status update, at once, at QPS and Burst).
	Kind  string  `json:"kind"`
	N     int     `json:"n"`
	Rate  float64 `json:"rate,omitempty"`
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// Wait bounds how long a dispatch waits for its add events.
	Wait time.Duration `json:"wait"`
}

type floorResult struct {
	// Latencies: creation → add event, one per object seen (dispatch).
	Latencies []time.Duration `json:"latencies,omitempty"`
	// Rate: objects created and updated per second (throughput).
	Rate float64 `json:"rate,omitempty"`
}

// floorClient runs job in a process of its own and returns its result.
func (e *env) floorClient(job floorJob) floorResult {
	t := e.t
	job.Kubeconfig, job.Wait = e.cluster.Kubeconfig(), e.sz.Wait
	spec, err := json.Marshal(job)
	must(t, err)
	self, err := os.Executable()
	must(t, err)
	p, err := cluster.StartProcess(cluster.ProcessOptions{Name: "floor client", Path: self,
		Env: []string{floorClientEnv + "=" + string(spec)}, LogPath: filepath.Join(t.TempDir(), "floor-"+job.Kind+".log")})
	must(t, err)
	select {
	case <-p.Done():
	case <-time.After(e.sz.Wait + time.Minute):
		_ = p.Stop(time.Second)
		t.Fatalf("the %s floor client did not finish within %s", job.Kind, e.sz.Wait+time.Minute)
	}
	for line := range strings.Lines(p.Log()) {
		if result, ok := strings.CutPrefix(line, floorResultPrefix); ok {
			var res floorResult
			must(t, json.Unmarshal([]byte(result), &res))
			return res
		}
	}
	t.Fatalf("the %s floor client printed no result:\n%s", job.Kind, p.Log())
	return floorResult{}
}

// runFloorClient is the floor client process: it runs the job and prints
// its result.
func runFloorClient(spec string) error {
	var job floorJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", job.Kubeconfig)
	if err != nil {
		return err
	}
	if job.QPS > 0 {
		cfg.QPS, cfg.Burst = job.QPS, job.Burst
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	var res floorResult
	switch job.Kind {
	case "dispatch":
		res.Latencies, err = floorDispatch(cfg, c, job)
	case "throughput":
		res.Rate, err = floorThroughput(c, job)
	default:
		err = fmt.Errorf("unknown floor kind %q", job.Kind)
	}
	if err != nil {
		return err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(floorResultPrefix + string(out))
	return nil
}

func benchItemIn(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(benchItem)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// floorDispatch creates job.N objects at job.Rate per second and times each
// from its create to its add event at an informer of this process.
func floorDispatch(cfg *rest.Config, c client.Client, job floorJob) ([]time.Duration, error) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	items, err := cache.New(cfg, cache.Options{DefaultNamespaces: map[string]cache.Config{job.Namespace: {}}})
	if err != nil {
		return nil, err
	}
	inf, err := items.GetInformer(ctx, benchItemIn("", ""))
	if err != nil {
		return nil, err
	}
	var (
		mu      sync.Mutex
		created = map[string]time.Time{}
		added   = map[string]time.Time{}
	)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		now := time.Now()
		if u, ok := o.(*unstructured.Unstructured); ok {
			mu.Lock()
			added[u.GetName()] = now
			mu.Unlock()
		}
	}}); err != nil {
		return nil, err
	}
	go func() { _ = items.Start(ctx) }()
	if !items.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the floor client's informer did not sync")
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / job.Rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for i := range job.N {
		<-tick.C
		name := fmt.Sprintf("f-%05d", i)
		wg.Go(func() {
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			if err := c.Create(ctx, benchItemIn(job.Namespace, name)); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	for deadline := time.Now().Add(job.Wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(added)
		mu.Unlock()
		if n >= job.N {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, len(added))
	for name, at := range added {
		if c, ok := created[name]; ok {
			lat = append(lat, at.Sub(c))
		}
	}
	return lat, nil
}

// floorThroughput creates job.N objects at once, 64 at a time, each
// followed by one status update, and returns objects per second.
func floorThroughput(c client.Client, job floorJob) (float64, error) {
	ctx := context.Background()
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		errMu sync.Mutex
		first error
	)
	start := time.Now()
	for range min(64, job.N) {
		wg.Go(func() {
			for i := range next {
				u := benchItemIn(job.Namespace, fmt.Sprintf("item-%05d", i))
				err := c.Create(ctx, u)
				if err == nil {
					u.Object["status"] = map[string]any{"done": true}
					err = c.Status().Update(ctx, u)
				}
				if err != nil {
					errMu.Lock()
					first = cmp.Or(first, err)
					errMu.Unlock()
				}
			}
		})
	}
	for i := range job.N {
		next <- i
	}
	close(next)
	wg.Wait()
	return float64(job.N) / time.Since(start).Seconds(), first
}
