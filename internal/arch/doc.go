// Package arch enforces the layers, in its tests. Every package of the
// module is classified by folder prefix (domain, use case, channel, fake,
// adapter, support, program; see classes), and a package no prefix
// matches fails the tests. The rules:
//
//   - the domain (campaign, engine, pace, reconcile) imports no use case,
//     channel, fake or adapter, and campaign imports nothing of the module;
//   - the run (internal/run) knows channels only through its Channel seam;
//   - channels (internal/whatsapp/..., internal/sms/...) never import each
//     other, and a fake imports nothing of what it fakes but the data both
//     sides share; only fakes import internal/fake, their plumbing;
//   - adapters and support know no channel, fake or run, except the
//     command line, which wires them; support knows no campaign;
//   - SQL is the store's, and each third-party module is imported only
//     where it belongs (the AWS SDK in the SMS channel, cobra and
//     progressbar in cli, Prometheus in metrics...).
//
// The consumer owns the interface: the engine says what it needs from a
// checkpoint or a sender in its own terms, and the store or a channel's
// client satisfies it. The check reads the go tool's own graph (go list),
// counts only non-test imports, and explains each violation with the
// shortest chain of imports; TestRulesCatchViolations shows each rule
// failing on a synthetic graph, and TestProbes puts the usual mistakes into
// a temporary copy of the module and expects the check to fail, in the way
// restic enforces its layers with depguard.
package arch
