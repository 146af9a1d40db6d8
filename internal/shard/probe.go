/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unmatchable is a valid selector no object can match: the range holds one
// hash value of 2^64, that of no UID in practice.
const unmatchable = "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')"

// invalid is a selector a server that parses selectors refuses (its range
// is empty); one that ignores the parameter answers as if it were absent.
const invalid = "shardRange(object.metadata.uid, '0x0000000000000001', '0x0000000000000000')"

// Probe tells whether the API server filters lists of gvk (a namespaced
// kind the operator may list) by ListOptions.ShardSelector. The JSON
// answer for custom resources carries no shardInfo, so the answer is read
// from behaviour:
//   - when any object exists, a list with a selector that cannot match
//     comes back empty from a filtering server and full from one that
//     ignores the selector;
//   - when none exists, a filtering server refuses a selector with an
//     empty range ("invalid shard selector"), and an ignoring one answers.
//
// namespace limits the lists to one namespace ("" lists cluster-wide), for
// an operator allowed to list only there.
func Probe(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, namespace string) (Filtering, error) {
	list := func(selector string) (int, error) {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := reader.List(ctx, l, client.Limit(1), client.InNamespace(namespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ShardSelector: selector}})
		return len(l.Items), err
	}
	any, err := list("")
	if err != nil {
		return "", fmt.Errorf("probing shard filtering: listing %s: %w", gvk.Kind, err)
	}
	if any > 0 {
		matched, err := list(unmatchable)
		if err != nil {
			return "", fmt.Errorf("probing shard filtering: listing %s with a shard selector: %w", gvk.Kind, err)
		}
		if matched == 0 {
			return ServerSide, nil
		}
		return ClientSide, nil
	}
	if _, err := list(invalid); err != nil {
		if strings.Contains(err.Error(), "shard selector") {
			return ServerSide, nil
		}
		return "", fmt.Errorf("probing shard filtering: listing %s with an empty shard range: %w", gvk.Kind, err)
	}
	return ClientSide, nil
}
