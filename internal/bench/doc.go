// Package bench holds the benchmarks that print the figures the issues
// ask for, each beside its target: pacing accuracy (WhatsApp messages,
// SMS parts), checkpoint overhead, import speed and memory, and scale (5
// numbers at 1,000/s against a sandbox process: rate, CPU, memory). Run
// them with `make bench`; they are not part of `go test ./...` (no test
// functions, benchmarks only).
package bench
