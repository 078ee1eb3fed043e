package receive

import "time"

// File is what the writer needs of a log file, for tests that wrap it to
// fail on demand.
type File = file

// WithFile makes cfg's receiver pass every log file it opens through wrap.
func WithFile(cfg Config, wrap func(File) File) Config { cfg.wrap = wrap; return cfg }

// WithAckTimeout makes a POST wait at most d for its fsync.
func WithAckTimeout(cfg Config, d time.Duration) Config { cfg.ackTimeout = d; return cfg }

// WithTick makes an idle writer check the day every d.
func WithTick(cfg Config, d time.Duration) Config { cfg.tick = d; return cfg }

// WithBacklog bounds OnKept's backlog to n bytes.
func WithBacklog(cfg Config, n int64) Config { cfg.backlog = n; return cfg }

// Queued is how many bodies wait for the writer.
func (r *Receiver) Queued() int { return len(r.queue) }
