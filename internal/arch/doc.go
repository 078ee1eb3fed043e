// Package arch enforces the import layers: no domain package (campaign,
// engine, pace, reconcile) may depend, directly or through other packages,
// on an adapter (store, whatsapp, sandbox, cli, webhook, csvin), and
// campaign imports no package of this module at all. Adapters may import
// domain packages; that is the intended direction.
//
// The consumer owns the interface: the engine says what it needs from a
// checkpoint or a sender in its own terms, and the SQLite store or the
// WhatsApp client satisfies it. A wrong-way import is what makes adding a
// channel or a provider hard, because the domain then knows the concrete
// adapter and every new one means editing the send loop. The check is a
// test (layers_test.go), run by `go test ./...` like any other, in the way
// restic enforces its layers with depguard. Only non-test imports count.
package arch
