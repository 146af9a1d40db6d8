/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package objects

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Until waits until cond accepts the object at key (returns nil) and leaves
// it in obj; a nil cond waits until it is deleted. With a client that watches it
// waits on a watch of that one object, so each change is seen as it is
// written and the API server is not read between changes; otherwise it
// reads the object every poll. Once timeout passed it fails g with cond's
// last complaint.
func Until[T client.Object](g gomega.Gomega, c client.Client, timeout, poll time.Duration,
	key client.ObjectKey, obj T, list client.ObjectList, cond func(T) error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	check := func(o T, err error) error {
		switch {
		case cond == nil && apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case cond == nil:
			return fmt.Errorf("%s still exists", key)
		}
		return cond(o)
	}
	w, watches := c.(client.WithWatch)
	var last error
	for ctx.Err() == nil {
		err := c.Get(ctx, key, obj)
		if last = check(obj, err); last == nil {
			return
		}
		if !watches {
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
			continue
		}
		since := ""
		if err == nil {
			since = obj.GetResourceVersion()
		}
		wi, err := w.Watch(ctx, list, client.InNamespace(key.Namespace), &client.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", key.Name),
			Raw:           &metav1.ListOptions{ResourceVersion: since},
		})
		if err != nil {
			last = err
			continue
		}
		if last = next(wi, check, obj); last == nil {
			return
		}
	}
	g.Expect(last).NotTo(gomega.HaveOccurred(), "%s after %s", key, timeout)
}

// next reads events until check accepts one (copied into obj) or the watch
// ends (the API server ends watches now and then; Until watches again).
func next[T client.Object](wi watch.Interface, check func(T, error) error, obj T) error {
	defer wi.Stop()
	last := fmt.Errorf("the watch ended")
	for ev := range wi.ResultChan() {
		o, ok := ev.Object.(T)
		switch {
		case ev.Type == watch.Error:
			return fmt.Errorf("watch: %w", apierrors.FromObject(ev.Object))
		case !ok:
			continue
		case ev.Type == watch.Deleted:
			last = check(o, apierrors.NewNotFound(metav1.SchemeGroupVersion.WithResource("").GroupResource(), o.GetName()))
		default:
			last = check(o, nil)
		}
		if last == nil {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o).Elem())
			return nil
		}
	}
	return last
}
