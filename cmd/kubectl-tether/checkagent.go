/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/conformance"
)

// exitNotConformant: check-agent ran and the agent broke a MUST.
const exitNotConformant = 3

// The machine-readable formats of check-agent's -o.
const (
	formatJSON = "json"
	formatYAML = "yaml"
)

type checkAgentFlags struct {
	url            string
	cardURL        string
	tenant         string
	allowedOrigins []string
	headers        []string // NAME=SECRET/KEY
	insecure       bool
	output         string
	groups         []string
	texts          conformance.Texts
	leaseTTL       time.Duration
	deadline       time.Duration
	within         time.Duration
	meter          string
	timeout        time.Duration
	cardKeys       string
	requireSig     bool
	pushListen     string
	pushURL        string
}

func newCheckAgentCommand(o *options) *cobra.Command {
	f := &checkAgentFlags{}
	cmd := &cobra.Command{
		Use:   "check-agent [AGENT]",
		Short: "Check whether an A2A agent keeps the promises tether relies on",
		Long: `Check whether an A2A agent keeps the promises tether relies on.

Reads the agent card, then runs a fixed script against the agent and prints one
row per check: the rule's level (MUST, SHOULD), the A2A TCK requirement ids it
matches, the result (pass, fail, not advertised, not run, skipped) and what was
seen. It checks the card's signature, every interface the card lists, send and
get on each, a reply to input-required keeping the task id, CancelTask of a
working and of a finished task, SubscribeToTask and push delivery when the card
declares them, the refusal of an A2A version the agent does not serve, look-up
by context and historyLength, and, when the card declares them, tether's lease
and budget extensions (docs/extensions.md).

The agent is conformant only when every MUST that applies ran and passed: a
MUST that failed, or could not run ("not run": the agent answered with a
message, refused the send or never reached the state the check needs), makes it
not conformant, and so does an agent that answers only with messages (tether
cannot follow its work). It exits 3 when the agent is not conformant.

Name an Agent (its URL, origins, tenant, TLS settings and header Secrets are
used, as the operator would), or give --url, with headers from Secrets
(--header Authorization=agent-token/value). The checks send messages whose ids
start with tether-check-, and cancel every task they start.

The card's signature is a SHOULD, a MUST when the Agent requires one
(spec.cardSignature.required, or --require-signature); the keys are the
Agent's key set, or --card-keys (a JSON Web Key Set file). The push check
listens on a loopback port when the agent is on loopback; for an agent
elsewhere give --push-listen and --push-url (how the agent reaches it).

The texts sent (--quick-text, --long-text, --ask-text, --reply-text) drive the
sample agents; give the words your agent needs to finish at once, to work until
cancelled, and to ask for input.`,
		Example: `  kubectl tether check-agent writer
  kubectl tether check-agent --url http://127.0.0.1:9101 -o json
  kubectl tether check-agent --url https://agents.example.com/a2a --header Authorization=agent-token/value
  kubectl tether check-agent writer --checks card,core --long-text "sleep 600"`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: completeAgents(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "check the agent at this base URL instead of an Agent's")
	fl.StringVar(&f.cardURL, "card-url", "", "read the card here instead of URL/.well-known/agent-card.json (with --url)")
	fl.StringVar(&f.tenant, "tenant", "", "tenant sent with every request (default: the Agent's, else the card's)")
	fl.StringArrayVar(&f.allowedOrigins, "allowed-origin", nil, "further origin the card's interfaces may point at (with --url; repeatable)")
	fl.StringArrayVar(&f.headers, "header", nil, "NAME=SECRET/KEY: a header whose value is read from a Secret in the namespace (with --url; repeatable)")
	fl.BoolVar(&f.insecure, "insecure-skip-tls-verify-agent", false, "do not verify the agent's certificate (with --url)")
	fl.StringVarP(&f.output, "output", "o", "", "output format: json or yaml (default: the table)")
	fl.StringSliceVar(&f.groups, "checks", nil, "check groups to run: "+strings.Join(conformance.AllGroups, ",")+" (default: all)")
	fl.StringVar(&f.texts.Quick, "quick-text", conformance.DefaultTexts.Quick, "text of a task that finishes at once")
	fl.StringVar(&f.texts.Long, "long-text", conformance.DefaultTexts.Long, "text of a task that works until cancelled")
	fl.StringVar(&f.texts.Ask, "ask-text", conformance.DefaultTexts.Ask, "text of a task that asks for input")
	fl.StringVar(&f.texts.Reply, "reply-text", conformance.DefaultTexts.Reply, "reply sent to the task that asked for input")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 3*time.Second, "ttl of the lease checks (renewals run for two, a lapse must end within one)")
	fl.DurationVar(&f.deadline, "deadline", 3*time.Second, "how far ahead the budget deadline check sets its deadline")
	fl.DurationVar(&f.within, "within", 15*time.Second, "how long a task may take to reach a state (canceled, settled, stopped at its deadline)")
	fl.StringVar(&f.meter, "meter", "tokens", "the budget meter the agent spends")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	fl.StringVar(&f.cardKeys, "card-keys", "", "JSON Web Key Set file the card's signature is verified with (with --url)")
	fl.BoolVar(&f.requireSig, "require-signature", false, "make the card signature check a MUST (with --url)")
	fl.StringVar(&f.pushListen, "push-listen", "", "address the push check's receiver listens on (default: a loopback port, for an agent on loopback)")
	fl.StringVar(&f.pushURL, "push-url", "", "base URL the agent posts push notifications to (default: the --push-listen address)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.validate(args); err != nil {
			return err
		}
		return checkAgentCmd(cmd.Context(), o, f, args)
	}
	return cmd
}

func (f *checkAgentFlags) validate(args []string) error {
	switch {
	case len(args) == 0 && f.url == "":
		return usagef("name an Agent or give --url")
	case len(args) == 1 && f.url != "":
		return usagef("name an Agent or give --url, not both")
	case len(args) == 1 && (f.cardURL != "" || len(f.allowedOrigins) > 0 || len(f.headers) > 0 || f.insecure || f.cardKeys != "" || f.requireSig):
		return usagef("--card-url, --allowed-origin, --header, --insecure-skip-tls-verify-agent, --card-keys and --require-signature " +
			"go with --url; an Agent brings its own")
	case f.pushURL != "" && f.pushListen == "":
		return usagef("--push-url needs --push-listen (where the receiver listens)")
	case f.output != "" && f.output != formatJSON && f.output != formatYAML:
		return usagef("--output must be json or yaml, not %q", f.output)
	case f.leaseTTL < time.Second || f.deadline < time.Second || f.within < time.Second || f.timeout < time.Second:
		return usagef("--lease-ttl, --deadline, --within and --timeout must be at least 1s")
	}
	for _, g := range f.groups {
		if !slices.Contains(conformance.AllGroups, g) {
			return usagef("unknown check group %q (one of %s)", g, strings.Join(conformance.AllGroups, ", "))
		}
	}
	for _, h := range f.headers {
		if _, _, _, err := parseHeaderFlag(h); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// parseHeaderFlag reads NAME=SECRET/KEY.
func parseHeaderFlag(s string) (name, secret, key string, err error) {
	name, ref, ok := strings.Cut(s, "=")
	secret, key, ok2 := strings.Cut(ref, "/")
	if !ok || !ok2 || name == "" || secret == "" || key == "" {
		return "", "", "", fmt.Errorf("--header %q: want NAME=SECRET/KEY", s)
	}
	return name, secret, key, nil
}

func checkAgentCmd(ctx context.Context, o *options, f *checkAgentFlags, args []string) error {
	ep, requireSig, err := f.endpoint(ctx, o, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rep, err := conformance.Run(ctx, conformance.Options{Endpoint: ep, Texts: f.texts, LeaseTTL: f.leaseTTL,
		Deadline: f.deadline, Within: f.within, Meter: f.meter, Groups: f.groups,
		RequireSignature: requireSig || f.requireSig, PushListen: f.pushListen, PushURL: f.pushURL})
	if err != nil {
		return err
	}
	if err := printCheckReport(o.stdout, rep, f.output); err != nil {
		return err
	}
	if !rep.Verdict.Conformant {
		return codedError{fmt.Errorf("the agent is not conformant: %s", rep.Verdict.Reason), exitNotConformant}
	}
	return nil
}

// endpoint is how to reach the agent: the named Agent's settings (its
// Secrets and card key set read as the operator reads them), or the flags;
// and whether the Agent requires a signed card.
func (f *checkAgentFlags) endpoint(ctx context.Context, o *options, args []string) (a2a.Endpoint, bool, error) {
	ep, agent, err := f.agentEndpoint(ctx, o, args)
	if err != nil {
		return ep, false, err
	}
	if f.cardKeys != "" {
		data, err := os.ReadFile(f.cardKeys)
		if err != nil {
			return ep, false, err
		}
		if ep.CardKeys, err = a2a.ParseKeySet(data); err != nil {
			return ep, false, fmt.Errorf("--card-keys %s: %w", f.cardKeys, err)
		}
	}
	return ep, agent != nil && agent.Spec.CardSignature != nil && agent.Spec.CardSignature.Required, nil
}

// agentEndpoint returns the endpoint, and the Agent when one was named.
func (f *checkAgentFlags) agentEndpoint(ctx context.Context, o *options, args []string) (a2a.Endpoint, *v1alpha1.Agent, error) {
	if len(args) == 0 && len(f.headers) == 0 {
		ep := a2a.Endpoint{URL: f.url, CardURL: f.cardURL, AllowedOrigins: f.allowedOrigins, Tenant: f.tenant}
		hc, err := a2a.NewHTTPClient(a2a.HTTPOptions{InsecureSkipVerify: f.insecure})
		ep.HTTPClient = hc
		return ep, nil, err
	}
	e, err := o.connect()
	if err != nil {
		return a2a.Endpoint{}, nil, err
	}
	connector := &agentio.Connector{SecretReader: e.c}
	agent := &v1alpha1.Agent{}
	named := len(args) == 1
	if named {
		if err := e.c.Get(ctx, e.key(args[0]), agent); err != nil {
			return a2a.Endpoint{}, nil, err
		}
	} else {
		agent.Namespace = e.ns
		agent.Spec = v1alpha1.AgentSpec{URL: f.url, CardURL: f.cardURL, AllowedOrigins: f.allowedOrigins}
		if f.insecure {
			agent.Spec.TLS = &v1alpha1.AgentTLS{InsecureSkipVerify: true}
		}
		for _, h := range f.headers {
			name, secret, key, _ := parseHeaderFlag(h)
			agent.Spec.Headers = append(agent.Spec.Headers, v1alpha1.AgentHeader{Name: name,
				ValueFrom: v1alpha1.SecretKeyRef{Name: secret, Key: key}})
		}
	}
	ep, err := connector.Endpoint(ctx, agent, f.tenant)
	if err != nil {
		return a2a.Endpoint{}, nil, err
	}
	if ep.Headers == nil {
		ep.Headers = http.Header{}
	}
	if !named {
		return ep, nil, nil
	}
	if agent.Spec.CardSignature != nil {
		if ep.CardKeys, err = connector.CardKeys(ctx, agent); err != nil {
			return a2a.Endpoint{}, nil, err
		}
	}
	return ep, agent, nil
}

// printCheckReport prints the table, or the report as JSON or YAML.
func printCheckReport(w io.Writer, rep *conformance.Report, format string) error {
	switch format {
	case formatJSON:
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case formatYAML:
		b, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	fmt.Fprintf(w, "Agent %q at %s (run %s, %s)\n\n", rep.Agent, rep.URL, rep.RunID, rep.Duration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tTCK\tLEVEL\tRESULT\tSEEN")
	counts := map[conformance.Status]int{}
	for _, r := range rep.Results {
		counts[r.Status]++
		tck := strings.Join(r.TCK, ",")
		if tck == "" {
			tck = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, tck, r.Level, r.Status, escapeLine(r.Seen))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nchecks: %d pass, %d fail (%d MUST), %d not run (%d MUST), %d not advertised, %d skipped\n",
		counts[conformance.Pass], counts[conformance.Fail], len(rep.Failed(conformance.Must)),
		counts[conformance.NotRun], len(rep.NotRunOf(conformance.Must)), counts[conformance.NotAdvertised], counts[conformance.Skipped])
	verdict := "conformant"
	if !rep.Verdict.Conformant {
		verdict = "not conformant"
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", verdict, escapeLine(rep.Verdict.Reason))
	return err
}
