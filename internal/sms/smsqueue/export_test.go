package smsqueue

// WithAfterKeep makes the poller call f after a batch is kept and before
// it is deleted: the crash test kills the process there.
func WithAfterKeep(c Config, f func()) Config { c.afterKeep = f; return c }
