/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiWrites is the API server's own count of write requests (every verb
// but GET, LIST, WATCH) on one resource, from apiserver_request_total on
// its /metrics endpoint. Conflicts and other refusals count too: the
// server did the work.
func apiWrites(ctx context.Context, cfg *rest.Config, resource string) (float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return sumWrites(string(raw), resource), nil
}

func sumWrites(exposition, resource string) float64 {
	total := 0.0
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok || label(labels, "resource") != resource {
			continue
		}
		switch label(labels, "verb") {
		case "GET", "LIST", "WATCH", "CONNECT":
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			total += v
		}
	}
	return total
}

// label reads name="value" from a Prometheus label list.
func label(labels, name string) string {
	_, after, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// usage is a process's resident memory and the CPU time it has used.
type usage struct {
	RSSMiB     float64
	CPUSeconds float64
}

// usageOf reads /proc/<pid>: VmRSS from status, utime+stime from stat.
func usageOf(pid int) (usage, error) {
	var u usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if field, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(field), " kB"), 64)
			if err != nil {
				return u, fmt.Errorf("VmRSS %q: %w", field, err)
			}
			u.RSSMiB = kb / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// Fields after the command name (which may hold spaces) start at state.
	_, after, ok := strings.Cut(string(stat), ") ")
	fields := strings.Fields(after)
	if !ok || len(fields) < 13 {
		return u, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	u.CPUSeconds = (utime + stime) / ticksPerSecond
	return u, nil
}
