package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// ErrNumberKey is a number spec with a key that is not one of
// NumberKeys. The specs' other errors say what form they want: the front
// end names the flag.
var ErrNumberKey = errors.New("unknown key")

// NumberKeys are the keys of a number spec.
const NumberKeys = "health, quality, throughput, limit, send-error"

// ParseTemplate parses NAME:BODY_PARAMS[:LANG,LANG…].
func ParseTemplate(s string) (Template, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return Template{}, errors.New("want NAME:BODY_PARAMS[:LANGS]")
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 {
		return Template{}, fmt.Errorf("body parameter count %q", parts[1])
	}
	t := Template{Name: parts[0], BodyParams: n}
	if len(parts) == 3 && parts[2] != "" {
		t.Languages = strings.Split(parts[2], ",")
	}
	return t, nil
}

// SetNumber sets what a number reports or answers from ID:KEY=VALUE, KEY
// one of NumberKeys, into numbers.
func SetNumber(numbers map[string]NumberInfo, spec string) error {
	id, kv, ok1 := strings.Cut(spec, ":")
	key, val, ok2 := strings.Cut(kv, "=")
	if !ok1 || !ok2 || id == "" {
		return errors.New("want ID:KEY=VALUE")
	}
	n := numbers[id]
	switch key {
	case "health":
		n.Health = strings.ToUpper(val)
	case "quality":
		n.Quality = strings.ToUpper(val)
	case "throughput":
		n.Throughput = strings.ToUpper(val)
	case "limit":
		n.MessagingLimit = strings.ToUpper(val)
	case "send-error":
		code, err := strconv.Atoi(val)
		if err != nil {
			return errors.New("send-error takes a Meta error code")
		}
		n.SendError = code
	default:
		return fmt.Errorf("%w %q", ErrNumberKey, key)
	}
	numbers[id] = n
	return nil
}

// ParseDelay parses MIN-MAX (a uniform draw between) or one duration; 0
// means no delay.
func ParseDelay(v string) (Delay, error) {
	lo, hi, ok := strings.Cut(v, "-")
	if !ok {
		hi = lo
	}
	a, err1 := time.ParseDuration(lo)
	b, err2 := time.ParseDuration(hi)
	if err1 != nil || err2 != nil || a < 0 || b < a {
		return Delay{}, fmt.Errorf("want MIN-MAX (e.g. 1s-3s) or one duration, not %q", v)
	}
	if b == 0 {
		return Delay{Mean: -1}, nil // none
	}
	return Delay{Mean: (a + b) / 2, Jitter: (b - a) / 2}, nil
}

// String is d as ParseDelay reads it.
func (d Delay) String() string {
	lo, hi := max(d.Mean-d.Jitter, 0), max(d.Mean+d.Jitter, 0)
	if lo == hi {
		return lo.String()
	}
	return lo.String() + "-" + hi.String()
}

// Names lists defs as NAME/LANG (status), for the command's greeting.
func Names(defs []template.Definition) []string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name+"/"+d.Language+" ("+strings.ToLower(d.Status)+")")
	}
	return names
}

// Set is ParseDelay into d: a Delay is a flag's value.
func (d *Delay) Set(v string) error {
	p, err := ParseDelay(v)
	if err == nil {
		*d = p
	}
	return err
}

// Type is how a Delay is written, for a flag's help.
func (*Delay) Type() string { return "MIN-MAX" }
