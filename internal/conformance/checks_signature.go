/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

// CheckCardSignature: the card is signed with a key of the set the run was
// given (A2A 1.0 §8.4). A SHOULD; a MUST when the Agent requires a
// signature (spec.cardSignature.required, Options.RequireSignature).
const CheckCardSignature = "card.signature"

const signatureTitle = "the agent card is signed with a key of the key set"

func (r *runner) checkCardSignature() {
	level := Should
	if r.opts.RequireSignature {
		level = Must
	}
	sig := r.card.Signature
	switch {
	case !sig.Signed:
		r.record(CheckCardSignature, signatureTitle, level, Fail, "the card is not signed")
	case sig.Verified:
		r.record(CheckCardSignature, signatureTitle, level, Pass, "signed by key %q (%s)", sig.KeyID, sig.Algorithm)
	case r.opts.Endpoint.CardKeys == nil:
		r.record(CheckCardSignature, signatureTitle, level, NotRun,
			"signed by key %q (%s); no key set to verify it with (--card-keys, or the Agent's spec.cardSignature.keys)", sig.KeyID, sig.Algorithm)
	default:
		r.record(CheckCardSignature, signatureTitle, level, Fail, "signed by key %q, no signature verifies: %v", sig.KeyID, sig.Err)
	}
}
