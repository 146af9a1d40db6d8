/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// ErrCardKeys matches (errors.Is) a key set named by spec.cardSignature
// that cannot be read or is not a JSON Web Key Set.
var ErrCardKeys = errors.New("the card's key set")

// CardKeys reads the key set the Agent's card must be signed with, on
// every card read (an uncached read: a key removed from the set is refused
// from the next read on). A Secret must carry the consent label.
func (c *Connector) CardKeys(ctx context.Context, agent *v1alpha1.Agent) (*jose.JSONWebKeySet, error) {
	ks := agent.Spec.CardSignature.Keys
	var (
		data  []byte
		where string
	)
	switch {
	case ks.ConfigMapKeyRef != nil:
		ref := ks.ConfigMapKeyRef
		where = fmt.Sprintf("ConfigMap %s/%s key %q", agent.Namespace, ref.Name, ref.Key)
		var cm corev1.ConfigMap
		if err := c.SecretReader.Get(ctx, types.NamespacedName{Namespace: agent.Namespace, Name: ref.Name}, &cm); err != nil {
			return nil, fmt.Errorf("%w: reading the %s: %w", ErrCardKeys, where, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("%w: the %s is missing", ErrCardKeys, where)
		}
		data = []byte(v)
	case ks.SecretKeyRef != nil:
		where = fmt.Sprintf("Secret %s/%s key %q", agent.Namespace, ks.SecretKeyRef.Name, ks.SecretKeyRef.Key)
		v, err := c.secretValue(ctx, agent.Namespace, *ks.SecretKeyRef)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCardKeys, err)
		}
		data = v
	default:
		return nil, fmt.Errorf("%w: spec.cardSignature.keys names neither a ConfigMap nor a Secret", ErrCardKeys)
	}
	set, err := a2a.ParseKeySet(data)
	if err != nil {
		// The parser's words only: never a fragment of the value.
		return nil, fmt.Errorf("%w: the %s: %v", ErrCardKeys, where, err)
	}
	return set, nil
}
