/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

// rbacGrant is one verb on one resource of one API group.
type rbacGrant struct{ group, resource, verb string }

var backticked = regexp.MustCompile("`([^`]+)`")

// docRBACTable reads the table under "## What the operator may do" in
// docs/security.md: an empty group or resource cell repeats the row above.
func docRBACTable(t *testing.T) []rbacGrant {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(raw), "\n## What the operator may do\n")
	if !found {
		t.Fatal(`docs/security.md has no "## What the operator may do" section`)
	}
	var out []rbacGrant
	group, resource, rows := "", "", 0
	for line := range strings.SplitSeq(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if rows > 0 {
				break // the first table ends
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) == "API group" || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		rows++
		if g := strings.TrimSpace(cells[0]); g != "" {
			group = strings.Trim(g, "`")
			if group == "core" {
				group = ""
			}
		}
		if r := backticked.FindStringSubmatch(cells[1]); r != nil {
			resource = r[1]
		}
		for _, v := range backticked.FindAllStringSubmatch(cells[2], -1) {
			out = append(out, rbacGrant{group, resource, v[1]})
		}
	}
	return out
}

// The table of the operator's permissions in docs/security.md says exactly
// what the chart's role grants: a rule added to the code (and so to the
// chart) without its row, or a row for a rule that is gone, fails here.
func TestSecurityDocListsExactlyTheOperatorsRules(t *testing.T) {
	g := NewWithT(t)
	doc := docRBACTable(t)
	g.Expect(doc).NotTo(BeEmpty())
	role := decode[rbacv1.ClusterRole](t, renderChart(t).one(t, "ClusterRole", "tether-manager"))
	var chart []rbacGrant
	for _, r := range role.Rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					chart = append(chart, rbacGrant{group, res, v})
				}
			}
		}
	}
	key := func(a, b rbacGrant) int {
		return strings.Compare(a.group+"/"+a.resource+"/"+a.verb, b.group+"/"+b.resource+"/"+b.verb)
	}
	slices.SortFunc(doc, key)
	slices.SortFunc(chart, key)
	g.Expect(doc).To(Equal(chart), "docs/security.md's table against the chart's tether-manager ClusterRole")
}
