/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegationtree"
)

// addEventsToScheme adds what the plugin reads besides its own kinds: Events
// (the operator records them with the events.k8s.io API) and Namespaces.
func addEventsToScheme(s *runtime.Scheme) error {
	if err := eventsv1.AddToScheme(s); err != nil {
		return err
	}
	return corev1.AddToScheme(s)
}

func newEventsCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events [NAME]",
		Short: "List the Events of the tree under NAME (of every Delegation without NAME), oldest first",
		Example: `  kubectl tether events research
  kubectl tether events -A -o wide`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: completeDelegations(o),
	}
	return o.listing(cmd, eventsCmd)
}

func eventsCmd(ctx context.Context, e *env, args []string) error {
	ns := e.listNamespace()
	// Which Delegations count: the tree under NAME, or all of them.
	var members map[string]bool
	if len(args) == 1 {
		list := &v1alpha1.DelegationList{}
		if err := e.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		tops := named(list.Items, args[0])
		if len(tops) == 0 {
			return fmt.Errorf("delegation %q not found %s", args[0], e.where())
		}
		members = map[string]bool{}
		for _, d := range treeOrder(tops, childrenByParent(list.Items)) {
			members[treeKey(d.Namespace, d.Name)] = true
		}
	}
	events := &eventsv1.EventList{}
	if err := e.c.List(ctx, events, client.InNamespace(ns)); err != nil {
		return err
	}
	var items []eventsv1.Event
	for _, ev := range events.Items {
		if !delegationtree.IsAbout(&ev) {
			continue
		}
		r := ev.Regarding
		if members != nil && !members[treeKey(r.Namespace, r.Name)] {
			continue
		}
		items = append(items, ev)
	}
	slices.SortStableFunc(items, func(a, b eventsv1.Event) int {
		if c := lastSeen(a).Compare(lastSeen(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if !e.output.human() {
		list := &eventsv1.EventList{Items: items}
		for i := range list.Items {
			list.Items[i].APIVersion, list.Items[i].Kind = eventsv1.SchemeGroupVersion.String(), "Event"
		}
		return e.output.printObject(list, e.stdout)
	}
	if len(items) == 0 {
		fmt.Fprintf(e.stderr, "No events %s.\n", e.where())
		return nil
	}
	_, err := io.WriteString(e.stdout, renderEvents(items, e.now, e.output.wide(), e.allNamespaces))
	return err
}

// lastSeen is when an Event last happened (delegationtree.EventTime).
func lastSeen(ev eventsv1.Event) time.Time { return delegationtree.EventTime(&ev) }

func renderEvents(items []eventsv1.Event, now time.Time, wide, namespaces bool) string {
	header := []string{"LAST SEEN", "TYPE", colReason, "OBJECT", "MESSAGE"}
	if wide {
		header = append(header, "COUNT", "REPORTER")
	}
	if namespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	rows := make([][]string, 0, 1+len(items))
	rows = append(rows, header)
	for _, ev := range items {
		row := []string{
			age(metav1.NewTime(lastSeen(ev)), now),
			escapeLine(orNone(ev.Type)),
			escapeLine(orNone(ev.Reason)),
			"delegation/" + escapeLine(ev.Regarding.Name),
			escapeLine(orNone(ev.Note)),
		}
		if wide {
			count := 1
			if ev.Series != nil {
				count = int(ev.Series.Count)
			}
			row = append(row, strconv.Itoa(count), escapeLine(orNone(ev.ReportingController)))
		}
		if namespaces {
			row = append([]string{ev.Regarding.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return renderTable(rows)
}
