package reconcile

// chunk is what decode hands over: statuses, and after the last of them
// the error that ended the log (io.EOF at its end).
type chunk struct {
	statuses []Status
	err      error
}

const (
	chunkSize = 512 // statuses per chunk
	chunks    = 4   // chunks in use at a time: the memory of decoding ahead
)

// decode reads r into buffers taken from free and hands them over on full,
// until the log ends or stop is closed; then it closes full.
func decode(r Source, full chan<- chunk, free <-chan []Status, stop <-chan struct{}) {
	defer close(full)
	for {
		var buf []Status
		select {
		case buf = <-free:
		case <-stop:
			return
		}
		var err error
		for buf = buf[:0]; len(buf) < cap(buf); {
			var s Status
			if s, err = r.Next(); err != nil {
				break
			}
			buf = append(buf, s)
			if len(buf)%64 == 0 {
				select {
				case <-stop:
					return
				default:
				}
			}
		}
		select {
		case full <- chunk{buf, err}:
		case <-stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// stopDecode stops decode and waits until it has returned: then its
// Source is the caller's again.
func stopDecode(stop chan struct{}, full <-chan chunk) {
	close(stop)
	for range full {
	}
}
