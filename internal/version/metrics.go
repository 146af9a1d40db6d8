/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package version

import "github.com/prometheus/client_golang/prometheus"

// BuildInfo is the tether_build_info gauge: always 1, labelled with the build,
// so dashboards and alerts can join on the running version.
func BuildInfo() prometheus.Collector {
	i := Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tether_build_info",
		Help: "Build information of the running operator; the value is always 1.",
	}, []string{"version", "commit", "date", "goversion"})
	g.WithLabelValues(i.Version, i.Commit, i.Date, i.GoVersion).Set(1)
	return g
}
