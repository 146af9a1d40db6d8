/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package version

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStampedValuesWinOverTheBuildRecord(t *testing.T) {
	g := NewWithT(t)
	record := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201-abc"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.time", Value: "2026-12-01T00:00:00Z"}}}, true
	}
	i := resolve("v0.2.0", "deadbeef", "2026-12-02T00:00:00Z", record)
	g.Expect(i.Version).To(Equal("v0.2.0"))
	g.Expect(i.Commit).To(Equal("deadbeef"))
	g.Expect(i.Date).To(Equal("2026-12-02T00:00:00Z"))

	i = resolve("", "", "", record)
	g.Expect(i.Version).To(Equal("v0.0.0-20261201-abc"), "go install records the module version")
	g.Expect(i.Commit).To(Equal("abc"))
	g.Expect(i.Date).To(Equal("2026-12-01T00:00:00Z"))
}

func TestUnstampedBuildSaysSo(t *testing.T) {
	g := NewWithT(t)
	i := resolve("", "", "", func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true
	})
	g.Expect(i.Version).To(Equal("dev"))
	g.Expect(i.Commit).To(Equal("unknown"))
	g.Expect(i.String()).To(HavePrefix("dev (commit unknown, built unknown, go"))
}

func TestBuildInfoMetric(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	g.Expect(reg.Register(BuildInfo())).To(Succeed())
	i := Get()
	want := fmt.Sprintf(`
# HELP tether_build_info Build information of the running operator; the value is always 1.
# TYPE tether_build_info gauge
tether_build_info{commit=%q,date=%q,goversion=%q,version=%q} 1
`, i.Commit, i.Date, i.GoVersion, i.Version)
	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(want), "tether_build_info")).To(Succeed())
}
