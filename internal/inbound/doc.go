// Package inbound is the use case of what comes back from providers,
// below any front end: statuses, replies and opt-outs, read from the
// logs a reconcile names (Reconcile) or applied live from the bodies
// bulksend receive keeps (Applier, Receive). Statuses go to campaign
// checkpoints through the reconcile domain; replies to the rows they
// answer; stops and lifts to the operator ledger's opt-outs (Hearer).
// What is particular to a channel (how its bodies and logs are read)
// comes through the Channel seam, which the front end's registry of
// channels fills. Errors here say what is wrong; the front end names the
// flags that fix them.
package inbound
